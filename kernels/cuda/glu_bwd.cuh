// The backward of the gating ops (swiglu_bwd.cu, geglu_bwd.cu): a, b, dy -> da, db, every operand
// of one shape. Each op file supplies a functor
//   __device__ void op(float a, float b, float dy, float& da, float& db)
// whose math runs in f32; each output is rounded once. Two kernels, as elementwise.cuh's:
//  - flat: all five tensors contiguous and 16-byte aligned. Each thread loads kFlatUnroll 16-byte
//    vectors of each input before computing, then stores both outputs' vectors; the block after
//    the last whole vector takes the n % kVec tail. Bytes moved: 5 n sizeof(T), the minimum.
//  - rows: any layout (padded or transposed inputs, odd alignment). One warp per segment of
//    32 * kRowsUnroll * kVec columns of one row, each tensor read and written through its own
//    RowView (16-byte accesses where its rows allow, element accesses otherwise).
#pragma once
#include <algorithm>
#include <array>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {

// s = sigmoid(x) and 1 - s without cancellation: with e = exp(-|x|), s = 1/(1+e) for x >= 0 and
// e/(1+e) for x < 0, 1 - s the other one. One expf and one IEEE division.
__device__ __forceinline__ float sigmoid_pair(float x, float& one_minus_s) {
  const float e = expf(-fabsf(x));
  const float r = 1.f / (1.f + e);
  const float er = e * r;
  const bool negative = x < 0.f;
  one_minus_s = negative ? r : er;
  return negative ? er : r;
}

template <typename T>
struct GluBwdFlatArgs {
  const T* in[3];  // a, b, dy
  T* out[2];       // da, db
  int64_t n;
};

template <typename T>
struct GluBwdRowsArgs {
  RowView<T> in[3];
  RowView<T> out[2];
  int64_t rows;
  int64_t cols;
  int64_t segs_per_row;
};

template <typename T, typename Op>
__global__ void __launch_bounds__(kFlatThreads) glu_bwd_flat_kernel(GluBwdFlatArgs<T> p, Op op) {
  constexpr int W = kVec<T>;
  const int64_t nvec = p.n / W;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * (kFlatThreads * kFlatUnroll) + threadIdx.x;
  Vec16<T> in[kFlatUnroll][3];
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const int64_t i = first + u * kFlatThreads;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < 3; ++k) in[u][k] = reinterpret_cast<const Vec16<T>*>(p.in[k])[i];
    }
  }
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const int64_t i = first + u * kFlatThreads;
    if (i < nvec) {
      Vec16<T> da, db;
#pragma unroll
      for (int e = 0; e < W; ++e) {
        float gda, gdb;
        op(element_float(in[u][0], e), element_float(in[u][1], e), element_float(in[u][2], e), gda, gdb);
        da.v[e] = from_float<T>(gda);
        db.v[e] = from_float<T>(gdb);
      }
      reinterpret_cast<Vec16<T>*>(p.out[0])[i] = da;
      reinterpret_cast<Vec16<T>*>(p.out[1])[i] = db;
    }
  }
  if (blockIdx.x == gridDim.x - 1) {  // the n % W elements after the last whole vector
    const int64_t i = nvec * W + threadIdx.x;
    if (i < p.n) {
      float gda, gdb;
      op(to_float(p.in[0][i]), to_float(p.in[1][i]), to_float(p.in[2][i]), gda, gdb);
      p.out[0][i] = from_float<T>(gda);
      p.out[1][i] = from_float<T>(gdb);
    }
  }
}

template <typename T, typename Op>
__global__ void __launch_bounds__(kRowsWarps * 32) glu_bwd_rows_kernel(GluBwdRowsArgs<T> p, Op op) {
  constexpr int W = kVec<T>;
  constexpr int64_t kSegCols = 32 * W * kRowsUnroll;
  const int lane = threadIdx.x & 31;
  const int64_t seg = static_cast<int64_t>(blockIdx.x) * kRowsWarps + (threadIdx.x >> 5);
  if (seg >= p.rows * p.segs_per_row) return;
  const int64_t row = seg / p.segs_per_row;
  const int64_t seg_col = (seg % p.segs_per_row) * kSegCols;
  const T* in_row[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) in_row[k] = p.in[k].row(row);
  T* out_row[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) out_row[k] = p.out[k].row(row);

#pragma unroll
  for (int j = 0; j < kRowsUnroll; ++j) {
    const int64_t c = seg_col + (j * 32 + lane) * W;
    if (c < p.cols) {
      float x[3][W];
#pragma unroll
      for (int k = 0; k < 3; ++k) load_vec<T, int64_t>(x[k], p.in[k], in_row[k], c, p.cols, 0.f);
      float da[W], db[W];
#pragma unroll
      for (int e = 0; e < W; ++e) op(x[0][e], x[1][e], x[2][e], da[e], db[e]);
      store_vec<T, int64_t>(out_row[0], p.out[0], c, p.cols, da);
      store_vec<T, int64_t>(out_row[1], p.out[1], c, p.cols, db);
    }
  }
}

template <typename T, typename Op>
Status launch_glu_bwd(const CudaDevice& device, const std::array<const Tensor*, 3>& in,
                      const std::array<const Tensor*, 2>& out, const Op& op) {
  const int64_t n = out[0]->numel();
  if (n == 0) return Status::ok();
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  bool flat = true;
  for (const Tensor* t : in) flat = flat && t->is_contiguous() && aligned(data_ptr<T>(*t));
  for (const Tensor* t : out) flat = flat && t->is_contiguous() && aligned(data_ptr<T>(*t));
  if (flat) {
    GluBwdFlatArgs<T> args;
    for (int k = 0; k < 3; ++k) args.in[k] = data_ptr<T>(*in[k]);
    for (int k = 0; k < 2; ++k) args.out[k] = data_ptr<T>(*out[k]);
    args.n = n;
    const int64_t blocks = std::max<int64_t>(1, ceil_div(n / kVec<T>, kFlatThreads * kFlatUnroll));
    if (blocks > INT32_MAX) return Status::unsupported("tensor too large for one launch");
    glu_bwd_flat_kernel<T, Op><<<static_cast<unsigned>(blocks), kFlatThreads, 0, device.stream()>>>(args, op);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  GluBwdRowsArgs<T> args;
  for (int k = 0; k < 3; ++k) {
    auto view = make_row_view<T>(*in[k]);
    if (!view) return view.status();
    args.in[k] = *view;
  }
  for (int k = 0; k < 2; ++k) {
    auto view = make_row_view<T>(*out[k]);
    if (!view) return view.status();
    args.out[k] = *view;
  }
  args.rows = args.out[0].ri.rows;
  args.cols = args.out[0].ri.cols;
  for (const RowView<T>* v : {&args.in[0], &args.in[1], &args.in[2], &args.out[1]})
    if (v->ri.rows != args.rows || v->ri.cols != args.cols)
      return Status::bad_input("cuda glu_bwd: operands are not seen as the same rows");
  args.segs_per_row = ceil_div(args.cols, 32 * kVec<T> * kRowsUnroll);
  const int64_t blocks = ceil_div(args.rows * args.segs_per_row, kRowsWarps);
  if (blocks > INT32_MAX) return Status::unsupported("tensor too large for one launch");
  glu_bwd_rows_kernel<T, Op><<<static_cast<unsigned>(blocks), kRowsWarps * 32, 0, device.stream()>>>(args, op);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// Checks the call (inputs a, b, dy and outputs da, db of the problem's dtype and one shape) and
// launches `op` for the problem's dtype.
template <typename Op>
Status run_glu_bwd(OpCall& call, const Op& op) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 3 || call.outputs.size() != 2)
    return Status::bad_input("cuda " + call.problem.op + ": expected inputs (a, b, dy) and outputs (da, db)");
  const char* names[5] = {"a", "b", "dy", "da", "db"};
  const Tensor* tensors[5] = {&call.inputs[0], &call.inputs[1], &call.inputs[2], &call.outputs[0],
                              &call.outputs[1]};
  for (int k = 0; k < 5; ++k) {
    DNNB_TRY(expect_tensor(*tensors[k], call.problem.dtype, names[k]));
    if (tensors[k]->shape != tensors[3]->shape)
      return Status::bad_input("cuda " + call.problem.op + ": " + names[k] + " is " + tensors[k]->describe() +
                               ", da " + tensors[3]->describe());
  }
  return dispatch_float(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    return launch_glu_bwd<T, Op>(**device, {tensors[0], tensors[1], tensors[2]}, {tensors[3], tensors[4]}, op);
  });
}

}  // namespace dnnb::cuda_kernels
