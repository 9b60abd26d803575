// CUDA dot: y[r] = sum_k a[r, k] b[r, k] over the last dim (torch.dot for 1-D operands, a 0-d
// y; torch.linalg.vecdot for rows), f32 accumulation, y of the input dtype or f32 (y.dt=f32).
//
// Bound by reading a and b once. Each thread keeps 4 x 2 16-byte loads in flight (dot_range: all
// issued before their FMAs, read with ld.global.nc.L1::no_allocate) where the rows are 16-byte
// vectors, one vector at a time through load_vec elsewhere. Three shapes of work, all with fixed
// reduction orders (deterministic, no atomics):
//   - many rows (>= 512): a warp per row, lanes striding over it, a butterfly at the end;
//   - few rows: a block of 256 threads per row (a block reduction);
//   - few long rows: each row split into S pieces, a block per piece writing its partial sum to
//     the workspace (Implementation::workspace_bytes: rows x S floats), then one warp per row
//     adds its S partials in a fixed order. S gives about 1024 blocks in all and at least 8192
//     elements per block: a single row of 16M elements is read by 1024 blocks, where one block
//     would reach a few percent of the DRAM bandwidth.
// The split depends only on the problem, so workspace_bytes and run agree.
#include <algorithm>

#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr int kDotThreads = 256;
inline constexpr int64_t kWarpRowsFrom = 512;  // rows at which a warp per row fills the GPU
inline constexpr int64_t kMinSplitElements = 8192;
inline constexpr int64_t kTargetBlocks = 1024;
inline constexpr int64_t kMaxSplits = 1024;

struct DotShape {
  int64_t rows = 1, cols = 1, splits = 1;
  bool warp_rows = false;
};

DotShape dot_shape(const Problem& problem) {
  DotShape s;
  s.cols = problem.shape.back();
  s.rows = shape_numel(problem.shape) / s.cols;
  s.warp_rows = s.rows >= kWarpRowsFrom;
  if (!s.warp_rows)
    s.splits = std::clamp<int64_t>(std::min(ceil_div(s.cols, kMinSplitElements), ceil_div(kTargetBlocks, s.rows)), 1,
                                   kMaxSplits);
  return s;
}

template <typename T>
struct DotArgs {
  RowView<T> a, b;
  void* y;  // contiguous, one element per row
  int64_t rows, cols, splits, span;  // span: elements per split, a multiple of the vector width
  float* partial;                    // [rows][splits] when splits > 1
  bool out_f32;
};

template <typename T>
__device__ __forceinline__ void store_y(const DotArgs<T>& p, int64_t r, float v) {
  if (p.out_f32)
    static_cast<float*>(p.y)[r] = v;
  else
    static_cast<T*>(p.y)[r] = from_float<T>(v);
}

// 16 bytes read once: through the non-coherent path without allocating in L1.
template <typename T>
__device__ __forceinline__ Vec16<T> load_stream16(const T* ptr) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(ptr));
  Vec16<T> out;
  *reinterpret_cast<uint4*>(&out) = v;
  return out;
}

// Sum of a[c] b[c] over this thread's vectors c = first, first + step, ... below end. Rows of
// 16-byte vectors take kDotUnroll vectors of each operand per iteration, all 2 x kDotUnroll loads
// issued before the FMAs (the bytes in flight per thread that keep DRAM busy); the vectors left
// over (and other layouts) go one at a time through load_vec.
inline constexpr int kDotUnroll = 4;

template <typename T>
__device__ __forceinline__ float dot_range(const DotArgs<T>& p, const T* ar, const T* br, int64_t first, int64_t end,
                                           int64_t step) {
  constexpr int V = kVec<T>, U = kDotUnroll;
  float acc = 0.f;
  int64_t c = first;
  if (p.a.vec && p.b.vec) {
    for (; c + (U - 1) * step + V <= end; c += U * step) {
      Vec16<T> av[U], bv[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        av[u] = load_stream16(ar + c + u * step);
        bv[u] = load_stream16(br + c + u * step);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j) acc = fmaf(element_float(av[u], j), element_float(bv[u], j), acc);
    }
  }
  for (; c < end; c += step) {
    float av[V], bv[V];
    load_vec<T, int64_t>(av, p.a, ar, c, end, 0.f);
    load_vec<T, int64_t>(bv, p.b, br, c, end, 0.f);
#pragma unroll
    for (int j = 0; j < V; ++j) acc = fmaf(av[j], bv[j], acc);
  }
  return acc;
}

template <typename T>
__global__ void __launch_bounds__(kDotThreads) dot_warp_rows_kernel(const DotArgs<T> p) {
  constexpr int V = kVec<T>;
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (kDotThreads / 32) + (threadIdx.x >> 5);
  if (r >= p.rows) return;
  const float v = warp_reduce(dot_range(p, p.a.row(r), p.b.row(r), lane * V, p.cols, 32 * V), SumOp{});
  if (lane == 0) store_y(p, r, v);
}

// Block (s, r): elements [s span, min(cols, (s + 1) span)) of row r.
template <typename T>
__global__ void __launch_bounds__(kDotThreads) dot_block_kernel(const DotArgs<T> p) {
  constexpr int V = kVec<T>;
  __shared__ float scratch[32];
  const int64_t r = blockIdx.y, s = blockIdx.x;
  const int64_t begin = s * p.span, end = min(p.cols, begin + p.span);
  const float v = group_reduce(dot_range(p, p.a.row(r), p.b.row(r), begin + threadIdx.x * V, end, kDotThreads * V),
                               SumOp{}, 0.f, kDotThreads, scratch);
  if (threadIdx.x == 0) {
    if (p.splits == 1)
      store_y(p, r, v);
    else
      p.partial[r * p.splits + s] = v;
  }
}

// A warp per row: the row's partial sums, lane-strided then a butterfly.
template <typename T>
__global__ void __launch_bounds__(kDotThreads) dot_finish_kernel(const DotArgs<T> p) {
  const int lane = threadIdx.x & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (kDotThreads / 32) + (threadIdx.x >> 5);
  if (r >= p.rows) return;
  float acc = 0.f;
  for (int64_t s = lane; s < p.splits; s += 32) acc += p.partial[r * p.splits + s];
  acc = warp_reduce(acc, SumOp{});
  if (lane == 0) store_y(p, r, acc);
}

Result<size_t> dot_workspace(const Problem& problem, const DeviceRuntime&) {
  if (problem.shape.empty()) return Status::bad_input("dot: empty shape");
  const DotShape s = dot_shape(problem);
  return s.splits > 1 ? static_cast<size_t>(s.rows * s.splits) * sizeof(float) : size_t{0};
}

Status run_dot(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda dot: expected inputs a, b and output y");
  const DType in = call.problem.dtype;
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(a, in, "a"));
  DNNB_TRY(expect_tensor(b, in, "b"));
  DNNB_TRY(expect_product_output(y, in));
  if (a.shape != call.problem.shape || b.shape != call.problem.shape)
    return Status::bad_input("cuda dot: operands " + a.describe() + ", " + b.describe() + " are not " +
                             shape_to_string(call.problem.shape));
  if (!y.is_contiguous()) return Status::unsupported("cuda dot writes a contiguous y, got " + y.describe());
  const DotShape shape = dot_shape(call.problem);
  if (y.numel() != shape.rows) return Status::bad_input("cuda dot: y " + y.describe() + " is not one value per row");
  float* partial = nullptr;
  if (shape.splits > 1) {
    const size_t need = static_cast<size_t>(shape.rows * shape.splits) * sizeof(float);
    if (!call.workspace.buffer || call.workspace.buffer->handle == nullptr ||
        storage_bytes(call.workspace.dtype, call.workspace.numel()) < need)
      return Status::bad_input("cuda dot: the workspace of " + std::to_string(need) + " bytes is missing");
    partial = data_ptr<float>(call.workspace);
  }
  return dispatch_float(in, [&](auto tag) -> Status {
    using T = decltype(tag);
    constexpr int V = kVec<T>;
    DotArgs<T> p{};
    auto av = make_row_view<T>(a);
    if (!av) return av.status();
    auto bv = make_row_view<T>(b);
    if (!bv) return bv.status();
    p.a = *av;
    p.b = *bv;
    p.y = data_ptr<unsigned char>(y);
    p.rows = shape.rows;
    p.cols = shape.cols;
    p.splits = shape.splits;
    p.span = round_up(ceil_div(shape.cols, shape.splits), V);
    p.partial = partial;
    p.out_f32 = y.dtype == DType::f32;
    cudaStream_t stream = (*device)->stream();
    const int64_t warp_blocks = ceil_div(shape.rows, kDotThreads / 32);
    if (shape.warp_rows) {
      dot_warp_rows_kernel<T><<<static_cast<unsigned>(warp_blocks), kDotThreads, 0, stream>>>(p);
      DNNB_CUDA_CHECK_LAUNCH();
      return Status::ok();
    }
    const dim3 grid(static_cast<unsigned>(shape.splits), static_cast<unsigned>(shape.rows));  // rows < 512
    dot_block_kernel<T><<<grid, kDotThreads, 0, stream>>>(p);
    DNNB_CUDA_CHECK_LAUNCH();
    if (shape.splits > 1) {
      dot_finish_kernel<T><<<static_cast<unsigned>(warp_blocks), kDotThreads, 0, stream>>>(p);
      DNNB_CUDA_CHECK_LAUNCH();
    }
    return Status::ok();
  });
}

ProductImplementation dot_implementation() {
  ProductImplementation p;
  p.op = "dot";
  p.run = run_dot;
  p.workspace_bytes = dot_workspace;
  return p;
}

DNNB_REGISTER(register_product(dot_implementation()));

}  // namespace
}  // namespace dnnb::cuda_kernels
