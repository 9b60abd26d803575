// What every CUDA kernel file shares: dtype conversion and 16-byte vectors (device), tensors
// seen as rows (RowView), warp/block reductions, and the host glue: the device check, data
// pointers, dtype dispatch, stream-ordered scratch memory and registration.
//
// Numerics: every kernel loads its dtype, computes in f32 and rounds once to the output dtype
// (round to nearest even, as torch's .to() does). Math functions are the accurate ones (expf,
// tanhf, erff, logf; IEEE division); nothing here is built with fast-math. The one exception is
// exp_shifted_16bit below, used only where the output is f16/bf16 (its error bound is stated).
#pragma once
#include <type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>

#include "core/registry.h"
#include "core/tensor.h"
#include "devices/cuda/cuda_device.h"

namespace dnnb::cuda_kernels {

// ---------------------------------------------------------------------------------------------
// Dtypes on the device.

template <typename T>
inline constexpr DType kDType = DType::f32;
template <>
inline constexpr DType kDType<__half> = DType::f16;
template <>
inline constexpr DType kDType<__nv_bfloat16> = DType::bf16;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Elements per 16-byte access: 4 x f32, 8 x f16/bf16. 16-byte loads are the widest a thread
// can issue; they cut the instruction count per byte by 4 (f32) or 8 (16-bit types).
template <typename T>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(T));

template <typename T>
struct alignas(16) Vec16 {
  T v[kVec<T>];
};

// Element k of a loaded vector in f32. bf16 converts from the 32-bit word holding the pair: the
// low element is word << 16, the high one word & 0xffff0000, one instruction each, where
// to_float(p.v[k]) first moves the high half down (PRMT) and then shifts it back (2
// instructions; the 16-bit row kernels convert every element, so this is 0.5-1 instruction per
// element less). Same value, exactly. f32 and f16 as to_float.
template <typename T>
__device__ __forceinline__ float element_float(const Vec16<T>& p, int k) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const uint32_t word = reinterpret_cast<const uint32_t*>(p.v)[k / 2];
    return __uint_as_float(k % 2 == 0 ? word << 16 : word & 0xffff0000u);
  } else {
    return to_float(p.v[k]);
  }
}

// exp(x - m) for kernels whose outputs are f16 / bf16 (softmax, cross_entropy_bwd and the
// cross_entropy loss over 16-bit logits), as ex2.approx.ftz.f32(fma(x, log2e, -ms)) with
// ms = m * log2e rounded once per row: 2 instructions where expf's range reduction costs 10+.
// Why: at 2 bytes per element these kernels are issue-bound, not memory-bound: the copy rate
// leaves about 32 warp instructions per element (132 SMs x 4 issues/clk x 1.98 GHz against
// ~2e12 elements/s at 4 TB/s), and expf plus the conversions and reductions exceed that.
// Error: ex2.approx is within 2^-22 relative; fma rounds (x log2e - ms) once, 2^-24 relative to
// |x - m| log2e, which only matters where exp(x - m) is tiny; log2e as f32 is within 2^-25. ms's
// own rounding (|m| log2e 2^-24) scales every exp of the row by the same factor, which
// softmax's normalisation cancels exactly (cross_entropy adds the residual back, see there).
// All far below half a 16-bit ulp (2^-9 bf16, 2^-12 f16). x = -inf gives 0 (masked columns and
// fully masked rows: ms is 0 there); NaN stays NaN. ftz: results under 2^-126 become 0, an
// absolute error below 1.2e-38 (bf16 has subnormals down to 2^-133; f16's start at 2^-24).
// f32 outputs keep expf (tolerance 64 f32 eps, logits may be large).
inline constexpr float kLog2e = 1.44269504088896341f;

__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// exp(x - m) given ms = m * kLog2e (the row's pre-scaled shift); see above.
__device__ __forceinline__ float exp_shifted_16bit(float x, float ms) {
  return ex2_approx_ftz(fmaf(x, kLog2e, -ms));
}

// ---------------------------------------------------------------------------------------------
// Rows. A tensor is a batch of rows (core/tensor.h): element (r, c) is at
// data[row_start(r) + c * col_stride]. `vec` says every row starts 16-byte aligned with unit
// column stride, so whole vectors can be read with one 16-byte access.

// Start of row r in elements. The common cases (one collapsed outer dim, or none) are one
// multiply; several outer dims (broadcasts, transposed batches) take RowIndex::row_offset's
// divisions, which kernels do once per row, never per element.
__device__ __forceinline__ int64_t row_start(const RowIndex& ri, int64_t r) {
  if (ri.outer_dims == 0) return 0;
  if (ri.outer_dims == 1) return r * ri.stride[0];
  return ri.row_offset(r);
}

template <typename T>
struct RowView {
  T* data = nullptr;  // element 0 of the view (the tensor's offset applied); nullptr = absent
  RowIndex ri;
  bool vec = false;

  __device__ __forceinline__ T* row(int64_t r) const { return data + row_start(ri, r); }
};

// Reads the kVec elements of a row at columns [c, c + kVec) (c a multiple of kVec) into f32:
// one 16-byte load when the view allows it and the vector is whole, one load for a broadcast
// column (stride 0), else one load per element (still coalesced across the warp for unit
// stride). Columns >= end read as `pad`. The column type I is int in the register-resident
// kernels (rows <= 16K columns: fewer registers) and int64_t in the streaming ones.
template <typename T, typename I>
__device__ __forceinline__ void load_vec(float (&out)[kVec<T>], const T* row, int64_t col_stride,
                                         bool vec, I c, I end, float pad) {
  if (vec && c + kVec<T> <= end) {
    const Vec16<T> p = *reinterpret_cast<const Vec16<T>*>(row + c);
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) out[k] = element_float(p, k);
  } else if (col_stride == 0) {  // a broadcast column: one load
    const float v = c < end ? to_float(row[0]) : pad;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) out[k] = c + k < end ? v : pad;
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k)
      out[k] = c + k < end ? to_float(row[static_cast<int64_t>(c + k) * col_stride]) : pad;
  }
}

template <typename T, typename I>
__device__ __forceinline__ void load_vec(float (&out)[kVec<T>], const RowView<T>& view,
                                         const T* row, I c, I end, float pad) {
  load_vec<T, I>(out, row, view.ri.col_stride, view.vec, c, end, pad);
}

// One 16-byte store of a whole vector (dst 16-byte aligned). stream: st.global.cs, the
// evict-first (streaming) store, for outputs this kernel never reads again: the output then
// takes less of L2 from the rows in flight (rmsnorm's pipe kernel, norm_pipe.cuh).
template <typename T>
__device__ __forceinline__ void store_vec16(T* dst, const Vec16<T>& p, bool stream) {
  if (stream) {
    uint4 bits;
    memcpy(&bits, &p, sizeof(bits));
    __stcs(reinterpret_cast<uint4*>(dst), bits);
  } else {
    *reinterpret_cast<Vec16<T>*>(dst) = p;
  }
}

// Writes columns [c, min(c + kVec, end)) of a row, rounding once to T; whole vectors with
// store_vec16 (stream as there).
template <typename T, typename I>
__device__ __forceinline__ void store_vec(T* row, const RowView<T>& view, I c, I end,
                                          const float (&in)[kVec<T>], bool stream = false) {
  if (view.vec && c + kVec<T> <= end) {
    Vec16<T> p;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) p.v[k] = from_float<T>(in[k]);
    store_vec16(row + c, p, stream);
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k)
      if (c + k < end) row[static_cast<int64_t>(c + k) * view.ri.col_stride] = from_float<T>(in[k]);
  }
}

// Reads the kVec elements at columns [c, c + kVec) of a row as the dtype itself (no conversion):
// one 16-byte load when the view allows it, else one load per element; columns >= end read
// `pad` (rounded to T). For kernels that keep raw 16-bit vectors in registers (half the registers
// of f32 copies) and convert to f32 where the value is used.
template <typename T, typename I>
__device__ __forceinline__ void load_raw_vec(Vec16<T>& out, const T* row, int64_t col_stride,
                                             bool vec, I c, I end, float pad) {
  if (vec && c + kVec<T> <= end) {
    out = *reinterpret_cast<const Vec16<T>*>(row + c);
    return;
  }
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k)
    out.v[k] = c + k < end ? row[static_cast<int64_t>(c + k) * col_stride] : from_float<T>(pad);
}

// ---------------------------------------------------------------------------------------------
// Reductions. Butterfly (xor) shuffles leave the result in every lane; with a commutative op the
// lanes hold bit-identical values. The order is fixed by the launch shape, so results are
// deterministic run to run (no atomics anywhere in these kernels).

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {  // fmaxf: a masked (-inf) element never wins; NaN-ness is not what softmax tracks
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduction over a group of `group` threads: one warp (group == 32) or the whole block
// (group == blockDim.x, a multiple of 32). Every thread of the group gets the result.
// `scratch` is 32 floats of shared memory that only this reduction call uses, so one barrier
// suffices (no barrier is needed to protect it from the next reduction).
template <typename Op>
__device__ __forceinline__ float group_reduce(float v, Op op, float identity, int group,
                                              float* scratch) {
  v = warp_reduce(v, op);
  if (group <= 32) return v;
  const int lane = threadIdx.x & 31;
  if (lane == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  v = lane < group / 32 ? scratch[lane] : identity;
  return warp_reduce(v, op);
}

// max(a, b), NaN if either is NaN (fmaxf returns the other operand): max.NaN.f32, sm_80+.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// Online softmax statistics: m = running max, s = sum of exp(x - m). Merging rescales the side
// with the smaller max. Products and sum are rounded explicitly (no FMA contraction) so that
// merge(a, b) == merge(b, a) bit for bit: every lane of a butterfly ends with the same pair.
__device__ __forceinline__ void merge_max_sum(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) {  // both sides empty or fully masked: s == s2 == 0, or a NaN kept there
    s += s2;              // (cross_entropy.cuh): both sides of a butterfly get it
    return;
  }
  s = __fadd_rn(__fmul_rn(s, expf(m - mn)), __fmul_rn(s2, expf(m2 - mn)));
  m = mn;
}

__device__ __forceinline__ void group_reduce_max_sum(float& m, float& s, int group,
                                                     float* scratch_m, float* scratch_s) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge_max_sum(m, s, m2, s2);
  }
  if (group <= 32) return;
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    scratch_m[threadIdx.x >> 5] = m;
    scratch_s[threadIdx.x >> 5] = s;
  }
  __syncthreads();
  m = lane < group / 32 ? scratch_m[lane] : -INFINITY;
  s = lane < group / 32 ? scratch_s[lane] : 0.f;
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge_max_sum(m, s, m2, s2);
  }
}

// ---------------------------------------------------------------------------------------------
// Host glue.

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Launches `kernel` on the device's stream with one launch attribute: a cooperative launch
// (row_pipe.cuh) or a programmatic dependent launch of the launch before it (matmul_ggml).
template <typename A>
Status launch_with_attribute(const CudaDevice& device, void (*kernel)(A), unsigned grid, unsigned threads, size_t smem,
                             const cudaLaunchAttribute& attribute, const A& args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = device.stream();
  cudaLaunchAttribute attributes[1] = {attribute};
  config.attrs = attributes;
  config.numAttrs = 1;
  DNNB_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, args));
  return Status::ok();
}

// Launch shape of a register-resident row kernel (softmax, layernorm, rmsnorm): each thread
// holds `ept` elements (8 or 32, the two instantiations) of one row; `group` threads share a row.
//  - cols <= 1024: a warp per row, 8 rows per 256-thread block (no barrier in the reductions).
//  - cols <= kMaxRegisterCols: a block of cols / ept threads per row. With few rows (less than
//    two blocks per SM) 8 elements per thread shorten each row's latency; with many, 32 per
//    thread keep more rows in flight per SM.
// The kernels' launch bounds follow: ept 8 up to 1024 threads (<= 64 registers), ept 32 up to
// 512 threads (<= 128 registers: 32 floats of row plus addressing, without spills).
inline constexpr int64_t kMaxRegisterCols = 512 * 32;

template <int EPT>
inline constexpr int kRegisterRowsMaxThreads = EPT == 8 ? 1024 : 512;

struct RegisterRowsLaunch {
  int ept;
  int block;
  int group;
  int64_t grid;
};

inline RegisterRowsLaunch register_rows_launch(int64_t rows, int64_t cols, int sm_count) {
  if (cols <= 32 * 32) return {cols <= 32 * 8 ? 8 : 32, 256, 32, ceil_div(rows, 8)};
  const int ept = (rows < 2LL * sm_count && cols <= 8 * 1024) ? 8 : 32;
  const int block = static_cast<int>(round_up(ceil_div(cols, ept), 32));
  return {ept, block, block, rows};
}

// The CUDA device of a call, made current on this thread; an error for any other kind.
Result<const CudaDevice*> cuda_device_of(OpCall& call);

// ok when `t` has a buffer and the dtype `dtype`; names the tensor otherwise.
Status expect_tensor(const Tensor& t, DType dtype, const char* what);

template <typename T>
T* data_ptr(const Tensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.buffer->handle) +
                              storage_bytes(t.dtype, t.offset));
}

// True when every row of `ri` starting at `data` is 16-byte aligned and has unit stride.
bool rows_vectorizable(const void* data, const RowIndex& ri, int vec_elements);

template <typename T>
Result<RowView<T>> make_row_view(const Tensor& t) {
  auto ri = row_index(t);
  if (!ri) return ri.status();
  RowView<T> view;
  view.data = data_ptr<T>(t);
  view.ri = *ri;
  view.vec = rows_vectorizable(view.data, *ri, kVec<T>);
  return view;
}

// Calls f(T{}) with T = float, __half or __nv_bfloat16 for the problem's dtype. Without f16
// (cross-entropy) the f16 kernels are never instantiated.
template <bool kWithF16 = true, typename F>
Status dispatch_float(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(float{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    case DType::f16:
      if constexpr (kWithF16) return f(__half{});
      [[fallthrough]];
    default:
      return Status::unsupported(std::string("cuda kernels do not handle dtype ") +
                                 dtype_name(dtype));
  }
}

// Device memory for one run, allocated and freed in stream order on the device's stream (no
// synchronisation) from a per-device pool that keeps its memory between runs, so the
// allocation is cheap after the first call. The destructor frees it (for early error returns);
// release() frees it and reports failure.
class StreamScratch {
 public:
  static Result<StreamScratch> allocate(const CudaDevice& device, size_t bytes);
  StreamScratch(StreamScratch&& other) noexcept;
  StreamScratch& operator=(StreamScratch&&) = delete;
  StreamScratch(const StreamScratch&) = delete;
  ~StreamScratch();
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  Status release();

 private:
  StreamScratch(void* ptr, cudaStream_t stream) : ptr_(ptr), stream_(stream) {}
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Zeroed device counters, one set per device, allocated on first use and kept for the process:
// for kernels whose blocks meet through global atomics (the last block finishes a reduction, or
// every block waits for a grid-wide count). Each user puts its fields back to 0 before its kernel
// ends; users launch only on the device's stream without overlap (no programmatic dependent
// launch), so no launch sees another's counts. One field per user, so that a launch of one op
// never meets another op's counts.
struct GridCounters {
  unsigned cross_entropy_done = 0;      // cross_entropy_pipe.cuh: blocks finished
  unsigned cross_entropy_bwd_done = 0;  // softmax_pipe.cuh, grid count: blocks finished
  // softmax_pipe.cuh, grid count: blocks arrived << 40 | kept rows counted so far, one 64-bit
  // atomic per block so that a block that sees every arrival also sees every count (the counts
  // are 32-bit: rows < 2^32).
  unsigned long long cross_entropy_bwd_kept = 0;
};
inline constexpr int kGridArrivalShift = 40;
Result<GridCounters*> grid_counters(const CudaDevice& device);

// True when p starts a 16-byte vector (the flat kernels' 16-byte loads and stores).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Blocks of `threads` threads of `kernel` resident at once on the whole device (per SM, from
// the occupancy calculator, times the SMs), asked once per (kernel, device): the grid of a
// grid-stride kernel that should run in one wave.
Result<int64_t> resident_blocks(const void* kernel, int threads, const CudaDevice& device);

// Registers one CUDA implementation: the op's default (variant "", `when` empty) or an
// alternative (a variant name and, in `when`, the one sentence saying when a user would choose
// it over the default). `extra` adds op-specific checks to supports(). False, and a message on
// stderr, for a default with a `when` or an alternative without one.
bool register_cuda(std::string op, std::string variant, std::string when,
                   std::initializer_list<DType> dtypes, std::function<Status(OpCall&)> run,
                   std::function<Status(const Problem&)> extra = {});

}  // namespace dnnb::cuda_kernels
