// Experiment (not in the build or the registry): q8_0 matvec at M = 1 with persistent warps over
// equal contiguous ranges of (32- or 16-row tile, 8-block group) units, split tiles summed through
// per-warp partial slots by the last arriver (an atomic counter per tile), against a pure read of
// w at three grid sizes, over a sweep of rows a warp, warps a block and ring stages. Build and run
// on the GPU machine: nvcc -O3 -arch=sm_90 -std=c++17 -o mv ggml_matvec_balanced.cu && ./mv
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      std::printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

constexpr int kGB = 272, kChunks = 17;

__host__ __device__ inline int slot_of(int l, int b) {
  if (b & 1) return l;
  return l >= 2 && l < 30 ? l - 2 : (l < 2 ? 28 + l : l);
}
__device__ __forceinline__ uint32_t sa(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void cp16(uint32_t d, const void* s) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(s) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_g() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ float exact_float(int s) { return __int_as_float(0x4b400000 + s) - 12582912.0f; }
__device__ __forceinline__ void load4(uint32_t* w, const uint4* p) {
  const uint4 v = *p;
  w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
}

// Blocks J0 .. J0 + NB - 1 of one staged group of a row.
template <int NB, int J0>
__device__ __forceinline__ void part_dot(float& acc, const unsigned char* row, const unsigned char* xq, const float* xd) {
  const uint4* chunk = reinterpret_cast<const uint4*>(row);
  uint32_t win[12];
  load4(win, chunk + 2 * J0);
  load4(win + 4, chunk + 2 * J0 + 1);
  load4(win + 8, chunk + 2 * J0 + 2);
#pragma unroll
  for (int jj = 0; jj < NB; ++jj) {
    const int j = J0 + jj;
    if (jj > 0) {
#pragma unroll
      for (int k = 0; k < 4; ++k) win[k] = win[8 + k];
      load4(win + 4, chunk + 2 * j + 1);
      load4(win + 8, chunk + 2 * j + 2);
    }
    const int e = j >> 1;
    uint32_t wq[8];
    float dw;
    if (j % 2 == 0) {
      dw = __half2float(__ushort_as_half(static_cast<unsigned short>(win[e] & 0xffffu)));
#pragma unroll
      for (int k = 0; k < 7; ++k) wq[k] = win[e + 1 + k];
      wq[7] = __byte_perm(win[e], win[e + 8], 0x5432);
    } else {
      dw = __half2float(__ushort_as_half(static_cast<unsigned short>(win[e] >> 16)));
#pragma unroll
      for (int k = 0; k < 8; ++k) wq[k] = win[e + 1 + k];
    }
    const uint4* xb = reinterpret_cast<const uint4*>(xq + j * 32);
    const uint4 x0 = xb[0], x1 = xb[1];
    int s0 = __dp4a((int)wq[0], (int)x0.x, 0);
    int s1 = __dp4a((int)wq[4], (int)x1.x, 0);
    s0 = __dp4a((int)wq[1], (int)x0.y, s0);
    s1 = __dp4a((int)wq[5], (int)x1.y, s1);
    s0 = __dp4a((int)wq[2], (int)x0.z, s0);
    s1 = __dp4a((int)wq[6], (int)x1.z, s1);
    s0 = __dp4a((int)wq[3], (int)x0.w, s0);
    s1 = __dp4a((int)wq[7], (int)x1.w, s1);
    acc = fmaf(exact_float(s0 + s1), dw * xd[j], acc);
  }
}

struct P {
  const unsigned char* w;
  int64_t wrb;
  int n, nb;
  const unsigned char* xq;
  const float* xd;
  float* y;
  float* partial;  // total_warps x 2 x 32
  int* count;      // tiles
  int total;       // warps in the grid
};

__device__ __forceinline__ int owner(int64_t u, int64_t U, int64_t Tw) { return static_cast<int>(((u + 1) * Tw + U - 1) / U - 1); }

template <int RPW, int W, int S>
__global__ void __launch_bounds__(W * 32) mv3(const P p) {
  constexpr int LPR = 32 / RPW;
  constexpr int STAGE = RPW * kGB;
  constexpr int CH = RPW * kChunks;  // chunks a stage
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int G = p.nb / 8;
  const int64_t T = (p.n + RPW - 1) / RPW, U = T * G;
  const int gw = blockIdx.x * W + warp;
  const int64_t u0 = gw * U / p.total, u1 = (gw + 1) * U / p.total;
  unsigned char* ring = smem + warp * S * STAGE;
  const uint32_t ring_s = sa(ring);
  unsigned char* sx = smem + W * S * STAGE;
  float* sxd = reinterpret_cast<float*>(sx + p.nb * 32);

  auto issue = [&](int64_t u, int slot) {
    const int64_t t = u / G;
    const int g = static_cast<int>(u - t * G);
    const uint32_t st = ring_s + slot * STAGE;
#pragma unroll
    for (int k = 0; k < (CH + 31) / 32; ++k) {
      const int i = lane + 32 * k;
      if (CH % 32 == 0 || i < CH) {
        const int r = i / kChunks, c = i - r * kChunks;
        const int64_t row = t * RPW + r < p.n ? t * RPW + r : p.n - 1;
        cp16(st + 16 * i, p.w + row * p.wrb + static_cast<int64_t>(g) * kGB + 16 * c);
      }
    }
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (u0 + s < u1) issue(u0 + s, s);
    commit();
  }
  {
    const uint32_t sx_s = sa(sx);
    for (int i = threadIdx.x; i < p.nb * 2; i += blockDim.x) cp16(sx_s + 16 * i, p.xq + 16 * i);
    for (int b = threadIdx.x; b < p.nb; b += blockDim.x) sxd[b] = p.xd[b];
    commit();
    wait_g<0>();
    __syncthreads();
  }
  float acc = 0.0f;
  int64_t cur = u0 / G;
  const int r = lane / LPR, h = lane % LPR;
  auto flush = [&](int64_t t, int which) {
    if (LPR == 2) acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    const int first = owner(t * G, U, p.total), last = owner(t * G + G - 1, U, p.total);
    const int64_t row = t * RPW + r;
    if (first == last) {
      if (h == 0 && row < p.n) p.y[row] = acc;
      return;
    }
    if (h == 0) p.partial[(gw * 2 + which) * 32 + r] = acc;
    __threadfence();
    __syncwarp();
    int old = 0;
    if (lane == 0) old = atomicAdd(p.count + t, 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old != last - first) return;
    __threadfence();
    float v = 0.0f;
    for (int g = first; g <= last; ++g) {
      const int64_t gfirst_tile = (g * U / p.total) / G;
      const int wh = (t == gfirst_tile) ? 0 : 1;
      v += __ldcg(p.partial + (g * 2 + wh) * 32 + r);
    }
    if (h == 0 && row < p.n) p.y[row] = v;
    if (lane == 0) p.count[t] = 0;
  };
  int slot = 0, aslot = S - 1, which = 0;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t ahead = u + S - 1;
    if (ahead < u1) issue(ahead, aslot);
    commit();
    wait_g<S - 1>();
    __syncwarp();
    const int64_t t = u / G;
    const int g = static_cast<int>(u - t * G);
    if (t != cur) {
      flush(cur, which);
      which = 1;
      acc = 0.0f;
      cur = t;
    }
    const unsigned char* row = ring + slot * STAGE + r * kGB;
    if (LPR == 1)
      part_dot<8, 0>(acc, row, sx + g * 256, sxd + g * 8);
    else if (h == 0)
      part_dot<4, 0>(acc, row, sx + g * 256, sxd + g * 8);
    else
      part_dot<4, 4>(acc, row, sx + g * 256, sxd + g * 8);
    __syncwarp();
    slot = slot + 1 == S ? 0 : slot + 1;
    aslot = aslot + 1 == S ? 0 : aslot + 1;
  }
  if (u1 > u0) flush(cur, which);
}

__global__ void reference(const unsigned char* w, int64_t wrb, int n, int nb, const unsigned char* xq, const float* xd,
                          float* y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n) return;
  double acc = 0;
  for (int b = 0; b < nb; ++b) {
    const unsigned char* blk = w + row * wrb + 34 * b;
    const float dw = __half2float(__ushort_as_half(static_cast<unsigned short>(blk[0] | (blk[1] << 8))));
    int s = 0;
    for (int l = 0; l < 32; ++l) s += static_cast<int8_t>(blk[2 + l]) * static_cast<int8_t>(xq[32 * b + slot_of(l, b)]);
    acc += static_cast<double>(s) * dw * xd[b];
  }
  y[row] = static_cast<float>(acc);
}

__global__ void read_all(const uint4* p, int64_t n16, unsigned* out) {
  uint32_t a = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    const uint4 v0 = __ldcs(p + i), v1 = __ldcs(p + i + stride), v2 = __ldcs(p + i + 2 * stride), v3 = __ldcs(p + i + 3 * stride);
    a ^= v0.x ^ v0.y ^ v0.z ^ v0.w ^ v1.x ^ v1.y ^ v1.z ^ v1.w ^ v2.x ^ v2.y ^ v2.z ^ v2.w ^ v3.x ^ v3.y ^ v3.z ^ v3.w;
  }
  for (; i < n16; i += stride) {
    const uint4 v = __ldcs(p + i);
    a ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (a == 0x9e3779b9u) out[0] = a;
}

struct Buf {
  unsigned char* w;
};

int sms = 0;
constexpr int kRot = 4;

template <typename F>
double median_us(F launch, int reps = 60) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 8; ++i) launch(i);
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a));
    launch(i);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <int RPW, int W, int S>
void run_cfg(const std::vector<unsigned char*>& ws, int64_t wrb, int n, int nb, const unsigned char* xq, const float* xd,
             float* y, const std::vector<float>& ref, float* partial, int* count) {
  const auto k = &mv3<RPW, W, S>;
  const int smem = W * S * RPW * kGB + nb * 32 + nb * 4;
  if (smem > 227 * 1024) {
    std::printf("  RPW %2d W %2d S %d: smem %d too big\n", RPW, W, S, smem);
    return;
  }
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int bps = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, k, W * 32, smem));
  const int grid = bps * sms;
  P p{nullptr, wrb, n, nb, xq, xd, y, partial, count, grid * W};
  CK(cudaMemset(y, 0, n * 4));
  p.w = ws[0];
  k<<<grid, W * 32, smem>>>(p);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> got(n);
  CK(cudaMemcpy(got.data(), y, n * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = std::max(worst, std::fabs((double)got[i] - ref[i]) / (std::fabs(ref[i]) + 1e-2));
  const double us = median_us([&](int i) {
    P q = p;
    q.w = ws[i % kRot];
    k<<<grid, W * 32, smem>>>(q);
  });
  const double bytes = static_cast<double>(n) * wrb;
  std::printf("  RPW %2d W %2d S %d: %d blocks/SM, %d warps/SM, smem %6d: %7.2f us  %6.0f GB/s  err %.2e%s\n", RPW, W, S,
              bps, bps * W, smem, us, bytes / us / 1e3, worst, worst > 1e-3 ? "  WRONG" : "");
}

int main() {
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  const int shapes[][2] = {{14336, 4096}, {4096, 14336}, {4096, 4096}};
  for (auto& sh : shapes) {
    const int n = sh[0], k = sh[1], nb = k / 32;
    const int64_t wrb = 34LL * nb;
    const int64_t bytes = wrb * n;
    std::vector<unsigned char> hw(bytes);
    uint32_t s = 12345 + n;
    auto rnd = [&]() { s = s * 1664525u + 1013904223u; return s >> 8; };
    for (int64_t r = 0; r < n; ++r)
      for (int b = 0; b < nb; ++b) {
        unsigned char* blk = hw.data() + r * wrb + 34 * b;
        const __half d = __float2half(0.001f + (rnd() % 1000) * 1e-5f);
        unsigned short bits;
        std::memcpy(&bits, &d, 2);
        blk[0] = bits & 0xff;
        blk[1] = bits >> 8;
        for (int l = 0; l < 32; ++l) blk[2 + l] = static_cast<unsigned char>(rnd() % 255);
      }
    std::vector<unsigned char> hx(nb * 32);
    std::vector<float> hd(nb);
    for (auto& v : hx) v = static_cast<unsigned char>(rnd() % 255);
    for (auto& v : hd) v = 0.01f + (rnd() % 100) * 1e-4f;
    std::vector<unsigned char*> ws(kRot);
    for (auto& p : ws) {
      CK(cudaMalloc(&p, bytes));
      CK(cudaMemcpy(p, hw.data(), bytes, cudaMemcpyHostToDevice));
    }
    unsigned char* xq;
    float *xd, *y, *partial;
    int* count;
    unsigned* sink;
    CK(cudaMalloc(&xq, nb * 32));
    CK(cudaMalloc(&xd, nb * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&partial, 1 << 22));
    CK(cudaMalloc(&count, n * 4));
    CK(cudaMemset(count, 0, n * 4));
    CK(cudaMalloc(&sink, 4));
    CK(cudaMemcpy(xq, hx.data(), nb * 32, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(xd, hd.data(), nb * 4, cudaMemcpyHostToDevice));
    reference<<<(n + 127) / 128, 128>>>(ws[0], wrb, n, nb, xq, xd, y);
    CK(cudaDeviceSynchronize());
    std::vector<float> ref(n);
    CK(cudaMemcpy(ref.data(), y, n * 4, cudaMemcpyDeviceToHost));
    std::printf("1x%dx%d (w %.1f MB)\n", n, k, bytes / 1e6);
    for (int bpsm : {4, 8, 16}) {
      const double us = median_us([&](int i) {
        read_all<<<sms * bpsm, 256>>>(reinterpret_cast<const uint4*>(ws[i % kRot]), bytes / 16, sink);
      });
      std::printf("  read w, %2d x 256 threads/SM: %7.2f us  %6.0f GB/s\n", bpsm, us, bytes / us / 1e3);
    }
    run_cfg<32, 4, 2>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<32, 4, 3>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<32, 8, 2>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<32, 2, 4>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<32, 2, 6>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 4, 2>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 4, 3>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 4, 4>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 8, 2>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 8, 3>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 16, 2>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    run_cfg<16, 2, 6>(ws, wrb, n, nb, xq, xd, y, ref, partial, count);
    for (auto& p : ws) CK(cudaFree(p));
    CK(cudaFree(xq));
    CK(cudaFree(xd));
    CK(cudaFree(y));
    CK(cudaFree(partial));
    CK(cudaFree(count));
    CK(cudaFree(sink));
  }
  return 0;
}
