// The CUDA rope kernel, shared by rope (rotation by +angle) and rope_bwd (by -angle, the
// transpose): x [B, H, S, D] of any strides, pos [B, S] (i64 or i32) -> y.
//
// One block per position (b, s). Its threads first compute the position's cos/sin table in
// shared memory, once for all its heads: the angles f32(f32(pos) * inv_freq[i]) (__fmul_rn:
// never contracted) and their sincosf (CUDA's accurate one: full range reduction, within ~1 ulp
// for the 1e5-rad angles of far positions; not __sinf, whose error grows with |angle|). Then
// threadIdx.x runs over the units of a row: first the pair units of W pairs each (W = 16 bytes of
// the dtype: 4 f32 or 8 f16/bf16 pairs; half form: columns i..i+W-1 and h+i..h+i+W-1,
// interleaved: columns 2i..2i+2W-1), then the pass-through units of W columns of rot..D; and
// threadIdx.y over the heads. Rows are read and written as 16-byte vectors when every row of x
// and y starts 16-byte aligned with unit column stride and h and D - rot are whole vectors
// (kVector); otherwise one element at a time through the strides. Bandwidth-bound: x read once,
// y written once.
//
// inv_freq (ops::rope_inv_freq, computed on the host so that every backend has the same f32
// values) is a kernel parameter: __grid_constant__ lets threads index it in the parameter bank
// without a per-thread copy.
#pragma once
#include <climits>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/rope_desc.h"

namespace dnnb::cuda_kernels {
namespace rope_detail {

inline constexpr int kMaxPairs = 512;  // rot <= 1024: 2 KiB of the 4 KiB of kernel parameters, 4 KiB of shared table
inline constexpr int kThreads = 256;

struct RopeArgs {
  const void* x = nullptr;
  void* y = nullptr;
  const void* pos = nullptr;
  int64_t xs[4] = {}, ys[4] = {};  // strides in elements
  int64_t pos_b = 0, pos_s = 0;
  int pos_i32 = 0;
  int interleaved = 0;
  int64_t heads = 0, seq = 0, rot = 0, dim = 0;
  int units = 0, pair_units = 0;
  float sign = 1.f;
  float inv_freq[kMaxPairs] = {};
};

// Elements [c, c + W) of a row at col stride cs, those >= end read as 0 (kVector: one load).
template <typename T, bool kVector>
__device__ __forceinline__ void load_w(float (&v)[kVec<T>], const T* row, int64_t cs, int64_t c, int64_t end) {
  if constexpr (kVector) {
    const Vec16<T> p = *reinterpret_cast<const Vec16<T>*>(row + c);
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) v[k] = element_float(p, k);
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) v[k] = c + k < end ? to_float(row[(c + k) * cs]) : 0.f;
  }
}

template <typename T, bool kVector>
__device__ __forceinline__ void store_w(T* row, int64_t cs, int64_t c, int64_t end, const float (&v)[kVec<T>]) {
  if constexpr (kVector) {
    Vec16<T> p;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) p.v[k] = from_float<T>(v[k]);
    *reinterpret_cast<Vec16<T>*>(row + c) = p;
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k)
      if (c + k < end) row[(c + k) * cs] = from_float<T>(v[k]);
  }
}

template <typename T, bool kVector>
__global__ void __launch_bounds__(kThreads) rope_kernel(const __grid_constant__ RopeArgs a) {
  constexpr int W = kVec<T>;
  const int64_t b = blockIdx.x / a.seq, s = blockIdx.x % a.seq;
  const int64_t at = b * a.pos_b + s * a.pos_s;
  const int64_t p = a.pos_i32 ? static_cast<int64_t>(static_cast<const int32_t*>(a.pos)[at])
                              : static_cast<const int64_t*>(a.pos)[at];
  const float fp = __ll2float_rn(p);
  const T* __restrict__ x0 = static_cast<const T*>(a.x) + b * a.xs[0] + s * a.xs[2];
  T* __restrict__ y0 = static_cast<T*>(a.y) + b * a.ys[0] + s * a.ys[2];
  const int64_t h = a.rot / 2, xc = a.xs[3], yc = a.ys[3];
  __shared__ float cos_table[kMaxPairs], sin_table[kMaxPairs];
  for (int j = threadIdx.y * blockDim.x + threadIdx.x; j < h; j += blockDim.x * blockDim.y) {
    float sn, cs;
    sincosf(__fmul_rn(fp, a.inv_freq[j]), &sn, &cs);
    cos_table[j] = cs;
    sin_table[j] = sn * a.sign;
  }
  __syncthreads();
  for (int u = threadIdx.x; u < a.units; u += blockDim.x) {
    if (u >= a.pair_units) {  // columns rot + W k .. passed through
      const int64_t c = static_cast<int64_t>(u - a.pair_units) * W, rest = a.dim - a.rot;
      for (int64_t hd = threadIdx.y; hd < a.heads; hd += blockDim.y) {
        float v[W];
        load_w<T, kVector>(v, x0 + hd * a.xs[1] + a.rot * xc, xc, c, rest);
        store_w<T, kVector>(y0 + hd * a.ys[1] + a.rot * yc, yc, c, rest, v);
      }
      continue;
    }
    const int64_t i = static_cast<int64_t>(u) * W;
    float cs[W], sn[W];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      cs[k] = i + k < h ? cos_table[i + k] : 1.f;
      sn[k] = i + k < h ? sin_table[i + k] : 0.f;
    }
    for (int64_t hd = threadIdx.y; hd < a.heads; hd += blockDim.y) {
      const T* xr = x0 + hd * a.xs[1];
      T* yr = y0 + hd * a.ys[1];
      if (a.interleaved) {
        float lo[W], hi[W], out_lo[W], out_hi[W];
        load_w<T, kVector>(lo, xr, xc, 2 * i, a.rot);
        load_w<T, kVector>(hi, xr, xc, 2 * i + W, a.rot);
#pragma unroll
        for (int k = 0; k < W / 2; ++k) {  // pairs k (in lo) and W/2 + k (in hi)
          const int q = W / 2 + k;
          out_lo[2 * k] = lo[2 * k] * cs[k] - lo[2 * k + 1] * sn[k];
          out_lo[2 * k + 1] = lo[2 * k] * sn[k] + lo[2 * k + 1] * cs[k];
          out_hi[2 * k] = hi[2 * k] * cs[q] - hi[2 * k + 1] * sn[q];
          out_hi[2 * k + 1] = hi[2 * k] * sn[q] + hi[2 * k + 1] * cs[q];
        }
        store_w<T, kVector>(yr, yc, 2 * i, a.rot, out_lo);
        store_w<T, kVector>(yr, yc, 2 * i + W, a.rot, out_hi);
      } else {
        float x1[W], x2[W], y1[W], y2[W];
        load_w<T, kVector>(x1, xr, xc, i, h);
        load_w<T, kVector>(x2, xr + h * xc, xc, i, h);
#pragma unroll
        for (int k = 0; k < W; ++k) {
          y1[k] = x1[k] * cs[k] - x2[k] * sn[k];
          y2[k] = x2[k] * cs[k] + x1[k] * sn[k];
        }
        store_w<T, kVector>(yr, yc, i, h, y1);
        store_w<T, kVector>(yr + h * yc, yc, i, h, y2);
      }
    }
  }
}


// rope (sign +1) or rope_bwd (sign -1): inputs {x or dy, pos}, output {y or dx}.
inline Status run_rope(OpCall& call, float sign) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda " + call.problem.op + ": expected inputs (x, pos) and one output");
  auto d = ops::rope_desc(call.problem);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  const Tensor& pos = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(x, call.problem.dtype, "x"));
  DNNB_TRY(expect_tensor(y, call.problem.dtype, "y"));
  if (pos.dtype != DType::i64 && pos.dtype != DType::i32)
    return Status::unsupported("cuda " + call.problem.op + ": pos of dtype " + dtype_name(pos.dtype));
  DNNB_TRY(expect_tensor(pos, pos.dtype, "pos"));
  if (x.shape != d->x_shape() || y.shape != d->x_shape() || pos.shape != d->pos_shape())
    return Status::bad_input("cuda " + call.problem.op + ": " + x.describe() + ", " + pos.describe() + " -> " +
                             y.describe() + " do not match " + call.problem.to_string());
  if (d->pairs() > kMaxPairs)
    return Status::unsupported("cuda " + call.problem.op + ": rot=" + std::to_string(d->rot) +
                               " exceeds the kernel's parameter table of " + std::to_string(kMaxPairs) + " pairs");
  if (d->batch * d->seq > INT_MAX)
    return Status::unsupported("cuda " + call.problem.op + ": " + std::to_string(d->batch * d->seq) +
                               " positions exceed one block per position");
  RopeArgs a;
  a.pos_b = pos.strides[0];
  a.pos_s = pos.strides[1];
  a.pos_i32 = pos.dtype == DType::i32;
  a.interleaved = d->form == ops::RopeForm::interleaved;
  a.heads = d->heads;
  a.seq = d->seq;
  a.rot = d->rot;
  a.dim = d->dim;
  a.sign = sign;
  const auto inv = ops::rope_inv_freq(*d);
  for (size_t i = 0; i < inv.size(); ++i) a.inv_freq[i] = inv[i];
  for (int k = 0; k < 4; ++k) {
    a.xs[k] = x.strides[k];
    a.ys[k] = y.strides[k];
  }
  const cudaStream_t stream = (*device)->stream();
  return dispatch_float(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    constexpr int W = kVec<T>;
    a.x = data_ptr<T>(x);
    a.y = data_ptr<T>(y);
    a.pos = pos.dtype == DType::i32 ? static_cast<const void*>(data_ptr<int32_t>(pos))
                                    : static_cast<const void*>(data_ptr<int64_t>(pos));
    const int64_t h = d->pairs(), rest = d->dim - d->rot;
    bool vec = aligned16(a.x) && aligned16(a.y) && a.xs[3] == 1 && a.ys[3] == 1 && h % W == 0 && rest % W == 0;
    for (int k = 0; k < 3; ++k) vec = vec && a.xs[k] % W == 0 && a.ys[k] % W == 0;
    a.pair_units = static_cast<int>(ceil_div(h, W));
    a.units = a.pair_units + static_cast<int>(ceil_div(rest, W));
    int bx = 1;
    while (bx < a.units && bx < kThreads) bx *= 2;
    const int by = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kThreads / bx, d->heads)));
    const dim3 block(bx, by);
    const auto grid = static_cast<unsigned>(d->batch * d->seq);
    if (vec) {
      rope_kernel<T, true><<<grid, block, 0, stream>>>(a);
    } else {
      rope_kernel<T, false><<<grid, block, 0, stream>>>(a);
    }
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
}

// For supports(): the problem parses and its rotary dims fit the parameter table.
inline Status rope_extra(const Problem& problem) {
  auto d = ops::rope_desc(problem);
  if (!d) return d.status();
  if (d->pairs() > kMaxPairs)
    return Status::unsupported("cuda " + problem.op + ": rot=" + std::to_string(d->rot) +
                               " exceeds the kernel's parameter table of " + std::to_string(kMaxPairs) + " pairs");
  return Status::ok();
}

}  // namespace rope_detail
}  // namespace dnnb::cuda_kernels
