// CUDA linear_bwd: the gradients of F.linear through the GEMM engine (gemm.cuh), two products
// and a column sum:
//   dx (T x K) = dy (T x N) w (N x K): A = dy (unit k stride), B = w read as it is stored (unit
//                n stride): the wgmma kernel's K-major A and N-major B on Hopper.
//   dw (N x K) = dy^T (N x T) x (T x K): A = dy with its strides swapped (unit m stride), B = x.
//   db (N)     = the column sums of dy (bias=1), f32 sums over row slices, then the slices.
// T = B M tokens: a 3-D x and dy are read as rows of one matrix (their batch stride must be M
// row strides, which every layout the signature admits keeps).
// dw's A, dy^T, has its unit stride along M, which only the mma.sync kernel reads (its k_outer
// tiles, ldmatrix.trans); the wgmma kernel wants A K-major. So for f16/bf16, when the product
// with a row-major dy^T is one the wgmma kernel takes (Hopper, M and N >= 64, T a multiple of
// 8), dy^T is first copied into the workspace as an [N, T] row-major matrix (the layout ops'
// tiled transpose, kernels/cuda/copy_common.cuh); otherwise dw reads dy^T in place. f32 problems
// run on the FMA kernel with any strides and take no copy.
#include "kernels/cuda/copy_common.cuh"
#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels {
namespace {

// Column sums: a block of 32 x 8 threads sums 32 x kVec columns (256 of bf16, 128 of f32) over
// one slice of the rows, 8 rows at a time: a thread reads kVec consecutive columns of a row with
// one 16-byte load where dy allows it (unit column stride, 16-byte aligned rows), so a warp reads
// 512 contiguous bytes of a row. Then the 8 partial sums of each column in shared memory, in a
// fixed order. With one slice the block rounds straight into db; with several, each writes its
// f32 sums to partial[slice][col] and db_finish adds the slices in slice order: the same bits on
// every run.
inline constexpr int kDbThreadsX = 32, kDbRowLanes = 8;

template <typename T>
__global__ void __launch_bounds__(kDbThreadsX* kDbRowLanes)
    db_slices(const T* dy, int64_t s_row, int64_t s_col, bool vec, int64_t rows, int64_t n, int64_t slice_rows,
              float* partial, T* db, int64_t db_stride) {
  constexpr int V = kVec<T>;
  __shared__ float sums[kDbRowLanes][kDbThreadsX * V];
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * kDbThreadsX + threadIdx.x) * V;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * slice_rows;
  const int64_t last = min(rows, first + slice_rows);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.f;
  if (c0 < n)
    for (int64_t r = first + threadIdx.y; r < last; r += kDbRowLanes) {
      float v[V];
      load_vec<T, int64_t>(v, dy + r * s_row, s_col, vec, c0, n, 0.f);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += v[k];
    }
#pragma unroll
  for (int k = 0; k < V; ++k) sums[threadIdx.y][threadIdx.x * V + k] = acc[k];
  __syncthreads();
  if (threadIdx.y != 0) return;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int64_t col = c0 + k;
    if (col >= n) break;
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < kDbRowLanes; ++i) total += sums[i][threadIdx.x * V + k];
    if (gridDim.y == 1)
      db[col * db_stride] = from_float<T>(total);
    else
      partial[blockIdx.y * n + col] = total;
  }
}

template <typename T>
__global__ void db_finish(const float* partial, int slices, int64_t n, T* db, int64_t db_stride) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n) return;
  float total = 0.f;
  for (int i = 0; i < slices; ++i) total += partial[static_cast<int64_t>(i) * n + col];
  db[col * db_stride] = from_float<T>(total);
}

// Columns one db_slices block takes: 32 threads x one 16-byte vector of the dtype.
int64_t db_block_columns(DType dtype) { return kDbThreadsX * (16 / static_cast<int64_t>(storage_bytes(dtype, 1))); }

// Row slices of the column sum: enough blocks to fill an H100 (132 SMs x 8 blocks of 256
// threads) when the columns alone do not, each slice at least 256 rows.
int64_t db_slice_count(int64_t rows, int64_t n, DType dtype) {
  const int64_t col_blocks = ceil_div(n, db_block_columns(dtype));
  const int64_t want = ceil_div(132 * 8, col_blocks);
  return std::max<int64_t>(1, std::min(want, ceil_div(rows, 256)));
}

// 16-bit problems copy dy^T (where wgmma takes the copied product); f32 reads it in place.
bool uses_transpose(const Problem& p) { return p.dtype != DType::f32; }

// Workspace: dy^T (transpose path, 16-bit dtypes) at byte 0, then the db slices' f32 sums.
struct Workspace {
  int64_t transpose_bytes = 0, partial_offset = 0, partial_bytes = 0;
};

Result<Workspace> workspace_layout(const Problem& p) {
  auto d = ops::linear_bwd_desc(p);
  if (!d) return d.status();
  const int64_t rows = d->batch * d->m;
  Workspace w;
  if (uses_transpose(p)) w.transpose_bytes = round_up(rows * d->n * 2, 256);
  w.partial_offset = w.transpose_bytes;
  const int64_t slices = d->bias ? db_slice_count(rows, d->n, p.dtype) : 1;
  if (slices > 1) w.partial_bytes = slices * d->n * 4;
  return w;
}

// The row and column strides of a 2-D or 3-D operand read as rows x cols (rows = B M): a 3-D
// batch stride must be M row strides.
Result<MatrixStrides> token_rows(const Tensor& t, const char* name) {
  const MatrixStrides s = matrix_strides(t);
  if (t.ndim() == 3 && t.shape[0] > 1 && s.batch != t.shape[1] * s.row)
    return Status::unsupported(std::string("cuda linear_bwd: ") + name + " " + t.describe() +
                               " has batch items that are not one run of rows");
  return s;
}

template <typename T>
Status launch_db(const CudaDevice& device, const Tensor& dy, const MatrixStrides& sdy, int64_t rows, int64_t n,
                 const Tensor& db, float* partial) {
  const int64_t slices = db_slice_count(rows, n, kDType<T>);
  const int64_t slice_rows = ceil_div(rows, slices);
  const T* base = data_ptr<T>(dy);
  const bool vec = (sdy.col == 1 || n == 1) && aligned16(base) && (sdy.row * static_cast<int64_t>(sizeof(T))) % 16 == 0;
  const dim3 grid(static_cast<unsigned>(ceil_div(n, db_block_columns(kDType<T>))), static_cast<unsigned>(slices));
  db_slices<T><<<grid, dim3(kDbThreadsX, kDbRowLanes), 0, device.stream()>>>(
      base, sdy.row, sdy.col, vec, rows, n, slice_rows, partial, data_ptr<T>(db), db.strides[0]);
  DNNB_CUDA_CHECK_LAUNCH();
  if (slices == 1) return Status::ok();
  db_finish<T><<<static_cast<unsigned>(ceil_div(n, 256)), 256, 0, device.stream()>>>(
      partial, static_cast<int>(slices), n, data_ptr<T>(db), db.strides[0]);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

Status run_linear_bwd(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::linear_bwd_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 3 || call.outputs.size() != (d->bias ? 3u : 2u))
    return Status::bad_input(std::string("cuda linear_bwd: expected inputs x, w, dy and outputs dx, dw") +
                             (d->bias ? ", db" : ""));
  const DType in = call.problem.dtype;
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& dy = call.inputs[2];
  const Tensor& dx = call.outputs[0];
  const Tensor& dw = call.outputs[1];
  DNNB_TRY(expect_tensor(x, in, "x"));
  DNNB_TRY(expect_tensor(w, in, "w"));
  DNNB_TRY(expect_tensor(dy, in, "dy"));
  DNNB_TRY(expect_tensor(dx, in, "dx"));
  DNNB_TRY(expect_tensor(dw, in, "dw"));
  const int64_t rows = d->batch * d->m, n = d->n, k = d->k;
  if (x.numel() != rows * k || dy.numel() != rows * n || dx.shape != x.shape || w.shape != Shape{n, k} ||
      dw.shape != Shape{n, k} || x.shape.back() != k || dy.shape.back() != n)
    return Status::bad_input("cuda linear_bwd: operands " + x.describe() + ", " + w.describe() + ", " +
                             dy.describe() + " do not match " + call.problem.to_string());
  auto sx = token_rows(x, "x");
  if (!sx) return sx.status();
  auto sdy = token_rows(dy, "dy");
  if (!sdy) return sdy.status();
  auto sdx = token_rows(dx, "dx");
  if (!sdx) return sdx.status();
  const MatrixStrides sw = matrix_strides(w), sdw = matrix_strides(dw);
  if ((k > 1 && (sdx->col != 1 || sdw.col != 1)))
    return Status::unsupported("cuda linear_bwd: dx and dw need unit stride along K, got " + dx.describe() + ", " +
                               dw.describe());
  auto layout = workspace_layout(call.problem);
  if (!layout) return layout.status();
  const int64_t need = layout->partial_offset + layout->partial_bytes;
  if (need > 0 && (!call.workspace.buffer || call.workspace.numel() < need))
    return Status::bad_input("cuda linear_bwd: the workspace holds fewer than " + std::to_string(need) + " bytes");
  char* ws = need > 0 ? data_ptr<char>(call.workspace) : nullptr;

  // dx = dy w
  GemmCall gx;
  gx.in_dtype = in;
  gx.out_dtype = in;
  gx.m = rows;
  gx.n = k;
  gx.k = n;
  gx.a = data_ptr<unsigned char>(dy);
  gx.a_m = sdy->row;
  gx.a_k = sdy->col;
  gx.b = data_ptr<unsigned char>(w);
  gx.b_k = sw.row;
  gx.b_n = sw.col;
  gx.y = data_ptr<unsigned char>(dx);
  gx.y_m = sdx->row;
  DNNB_TRY(launch_gemm(**device, gx));

  // dw = dy^T x
  GemmCall gw;
  gw.in_dtype = in;
  gw.out_dtype = in;
  gw.m = n;
  gw.n = k;
  gw.k = rows;
  gw.a = data_ptr<unsigned char>(dy);
  gw.a_m = sdy->col;
  gw.a_k = sdy->row;
  gw.b = data_ptr<unsigned char>(x);
  gw.b_k = sx->row;
  gw.b_n = sx->col;
  gw.y = data_ptr<unsigned char>(dw);
  gw.y_m = sdw.row;
  if (layout->transpose_bytes > 0) {
    GemmCall packed = gw;
    packed.a = ws;
    packed.a_m = rows;
    packed.a_k = 1;
    // Only when the packed product runs on wgmma is the copy worth its traffic.
    if (gemm_wgmma_applies(packed, **device)) {
      Tensor dyt;
      dyt.dtype = in;
      dyt.shape = {n, rows};
      dyt.strides = {rows, 1};
      dyt.buffer = call.workspace.buffer;
      dyt.offset = call.workspace.offset / 2;
      Tensor src;
      src.dtype = in;
      src.shape = {n, rows};
      src.strides = {sdy->col, sdy->row};
      src.buffer = dy.buffer;
      src.offset = dy.offset;
      if (call.workspace.offset % 2 != 0) return Status::bad_input("cuda linear_bwd: the workspace is misaligned");
      DNNB_TRY(layout::copy_view(**device, src, dyt, "linear_bwd"));
      gw = packed;
    }
  }
  DNNB_TRY(launch_gemm(**device, gw));

  if (!d->bias) return Status::ok();
  const Tensor& db = call.outputs[2];
  DNNB_TRY(expect_tensor(db, in, "db"));
  if (db.shape != Shape{n}) return Status::bad_input("cuda linear_bwd: db " + db.describe() + " is not [" + std::to_string(n) + "]");
  float* partial = layout->partial_bytes > 0 ? reinterpret_cast<float*>(ws + layout->partial_offset) : nullptr;
  switch (in) {
    case DType::f32: return launch_db<float>(**device, dy, *sdy, rows, n, db, partial);
    case DType::f16: return launch_db<__half>(**device, dy, *sdy, rows, n, db, partial);
    case DType::bf16: return launch_db<__nv_bfloat16>(**device, dy, *sdy, rows, n, db, partial);
    default: return Status::unsupported(std::string("cuda linear_bwd has no ") + dtype_name(in) + " kernel");
  }
}

ProductImplementation linear_bwd_implementation() {
  ProductImplementation p;
  p.op = "linear_bwd";
  p.compute_unit = "bf16_tensor";
  p.run = run_linear_bwd;
  p.workspace_bytes = [](const Problem& problem, const DeviceRuntime&) -> Result<size_t> {
    auto w = workspace_layout(problem);
    if (!w) return w.status();
    return static_cast<size_t>(w->partial_offset + w->partial_bytes);
  };
  return p;
}

DNNB_REGISTER(register_product(linear_bwd_implementation()));

}  // namespace
}  // namespace dnnb::cuda_kernels
