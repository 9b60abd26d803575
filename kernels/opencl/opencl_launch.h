// Host-side helpers shared by the OpenCL kernels: program sources (prelude + op parts), build
// options per dtype, kernel arguments, launch geometry, enqueue with checks, registration.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "devices/opencl/opencl_device.h"
#include "kernels/opencl/program_dump.h"

namespace dnnb::opencl {

// RowIndex as a kernel argument; must match `dnnb_rows` in prelude.cl field for field.
struct ClRows {
  cl_long offset = 0;
  cl_long rows = 1;
  cl_long cols = 1;
  cl_long col_stride = 1;
  cl_long outer_dims = 0;
  cl_long size[RowIndex::kMaxOuterDims] = {1, 1, 1, 1};
  cl_long stride[RowIndex::kMaxOuterDims] = {0, 0, 0, 0};
};
static_assert(sizeof(ClRows) == 13 * sizeof(cl_long), "ClRows must match dnnb_rows in prelude.cl");

// The rows of a view (row_index), or unsupported for more than 4 non-collapsible outer dims.
Result<ClRows> cl_rows(const Tensor& t);
// A view with a trailing unit dim, so that the rows of a reduced output (x's shape minus its
// last dim) line up with the rows of x.
Tensor with_unit_last_dim(const Tensor& t);
// True when the view is contiguous (any offset).
inline bool is_flat(const Tensor& t) { return t.is_contiguous(); }
inline cl_mem cl_buffer(const Tensor& t) { return static_cast<cl_mem>(t.buffer->handle); }

// prelude.cl followed by `parts`, in order.
std::string program_source(std::initializer_list<const char*> parts);
// "-DDNNB_F32" etc. plus correctly rounded divide/sqrt where the device supports it, and for
// bf16 on NVIDIA sm_80+ the PTX store tier (-DDNNB_NV_PTX=1, bf16_nv_ptx below).
std::string build_options(const OpenCLDevice& device, DType dtype, const std::string& extra = "");
// True when bf16 programs for this device take the PTX store tier (prelude.cl, DNNB_NV_PTX): an
// NVIDIA platform and compute capability >= 8.0 read through cl_nv_device_attribute_query.
bool bf16_nv_ptx(const OpenCLDevice& device);

// The OpenCL runtime of a call, or an error naming what the device is.
Result<OpenCLDevice*> opencl_device(OpCall& call);

// clSetKernelArg in order; the first failure is kept and reported by status().
class KernelArgs {
 public:
  explicit KernelArgs(cl_kernel kernel) : kernel_(kernel) {}
  template <typename T>
  KernelArgs& add(const T& value) {
    set(sizeof(T), &value);
    return *this;
  }
  KernelArgs& add_local(size_t bytes) {
    set(bytes, nullptr);
    return *this;
  }
  const Status& status() const { return status_; }

 private:
  void set(size_t size, const void* value);
  cl_kernel kernel_;
  cl_uint index_ = 0;
  Status status_;
};

// Largest power-of-two work-group size this kernel may use on this device (<= cap).
Result<size_t> work_group_limit(OpenCLDevice& device, cl_kernel kernel, size_t cap = 1024);

// clEnqueueNDRangeKernel, checked; `what` names the kernel in the error.
Status enqueue(OpenCLDevice& device, cl_kernel kernel, cl_uint dims, const size_t* global, const size_t* local,
               const std::string& what);

// Elementwise geometry. flat: n elements, four per work-item, 1-D. rows: dim 0 over groups of
// four columns, dim 1 over rows (grid-stride loops in the kernels cover the rest).
// `per_item` is the number of elements (flat) or columns (rows) one work-item takes per step.
Status launch_flat(OpenCLDevice& device, cl_kernel kernel, int64_t n, const std::string& what, int64_t per_item = 4);
Status launch_elementwise_rows(OpenCLDevice& device, cl_kernel kernel, int64_t rows, int64_t cols,
                               const std::string& what, int64_t per_item = 4);

// Row kernels (one work-group per row). The work-group size is a power of two chosen so the
// row fits the register cache (DNNB_CACHE_VECS float4 per work-item) where possible; the
// kernel's last argument is local scratch of RowGeometry::scratch_bytes().
struct RowGeometry {
  size_t local = 1;
  size_t global = 1;
  // Local scratch for the merged work-group statistics: up to three floats per work-item
  // ((count, mean, M2) triples; (max, sum) pairs and plain sums use less).
  size_t scratch_bytes() const { return 3 * local * sizeof(cl_float); }
};
Result<RowGeometry> row_geometry(OpenCLDevice& device, cl_kernel kernel, int64_t rows, int64_t cols);
Status launch_rows(OpenCLDevice& device, cl_kernel kernel, const RowGeometry& geometry, const std::string& what);

// Row-cached kernels (row_body.cl): one work-group of exactly plan.wg items per row, each
// item holding `vecs` chunks of 16 bytes of storage (4 f32 or 8 f16/bf16 columns) in
// registers. The programs are built with row_options(); the kernels declare
// reqd_work_group_size(DNNB_ROW_WG) and size their local arrays from it; launch_row_cached()
// checks the compiled size against plan.wg before it enqueues.
constexpr size_t kRowWorkGroup = 256;
// How a row-cached kernel is built: the options of row_options(). Each row op (softmax,
// layernorm, rmsnorm and the cross-entropy ops) picks one plan per dtype (RowPlans); the
// reductions take the geometry fields only.
struct RowPlan {
  size_t wg = kRowWorkGroup;  // work-items per row (16..256, power of 2)
  bool packed = false;        // 16-bit rows cached as storage bits (uint4 = 8 columns in 4 registers)
  int max_regs = 64;          // registers of row cache per work-item the plan accepts
  // DNNB_ROW_RAW=1: a pass loads all its chunks as storage bits before converting any (row_body.cl
  // "raw loads"). Every row op's plan has it; the f32 reductions do not.
  bool raw = false;
  // DNNB_ROW_EARLY=1 (raw plans only): every other load of a row (mask, w, b) is issued with x's,
  // before any conversion or use (row_body.cl "early loads").
  bool early = false;
  // DNNB_HALF_MATH=2 for f16/bf16 programs (f32 keeps the built-in exp: the option is not given):
  // softmax and the cross-entropy ops take exp as native_exp2 (row_body.cl dnnb_row_exp, with its
  // error analysis), and bf16 stores round half away from zero (row_body.cl dnnb_bf16x8_narrow).
  bool fast_exp = false;
  // DNNB_ROW_ONE=1 (the cross-entropy ops): one work-group reduction per row over (max, sum of
  // exp) pairs instead of a max reduction then a sum reduction (logsumexp_body.cl).
  bool one_reduction = false;
  // DNNB_LSE_ONLINE=1 (one_reduction and raw only): each item's (max, sum) in one streaming pass
  // over its chunks, the exps of a write pass recomputed (logsumexp_body.cl).
  bool online = false;
};
// One plan per dtype.
struct RowPlans {
  RowPlan f32, f16, bf16;
  const RowPlan& operator()(DType dtype) const {
    return dtype == DType::f16 ? f16 : dtype == DType::bf16 ? bf16 : f32;
  }
};
// The same plans with the built-in exp and round-to-nearest-even stores (fast_exp off): the row
// ops' alternative "portable_math".
RowPlans without_fast_exp(RowPlans plans);
// How a row op runs one call under one plan, its program source given.
using RowOpRun = Status (*)(OpCall& call, const std::string& source, const RowPlan& plan);
// Registers the default of `op` (each dtype with its plan of `plans`) and, when the 16-bit plans
// take the fast exp, the alternative "portable_math" (without_fast_exp, for those dtypes only).
// `default_run`, when given, runs the default instead of `run`, with the same plans: for a default
// that picks a kernel by device (the bf16 cross_entropy on NVIDIA). False when a registration failed.
bool register_row_op(const std::string& op, const std::vector<DType>& dtypes, const RowPlans& plans,
                     const std::string& source, RowOpRun run, RowOpRun default_run = nullptr);

// Columns per chunk: 4 for f32, 8 for f16 and bf16.
int64_t row_chunk_width(DType dtype);
// True when a row is long enough for a whole work-group of `wg` items: at least a quarter
// chunk per item. Shorter rows go to the op's *_rows kernel, whose work-group size follows the
// row length.
bool row_fills_work_group(DType dtype, int64_t cols, size_t wg = kRowWorkGroup);
// The fewest chunks per work-item (1, 2, 4, ...; each chunk costs 4 registers for f32 and
// packed 16-bit, 8 for unpacked 16-bit; at most plan.max_regs) that hold a row of `cols`, or
// 0 when the row is too long or too short for the plan (the op then takes its *_rows kernel).
int row_cache_vecs(DType dtype, int64_t cols, const RowPlan& plan = RowPlan{});
// True when the typed 16-byte accesses of DNNB_ALIGNED=1 are legal for every view: unit
// column stride, offset and every outer stride a multiple of the chunk width, and the device
// aligns buffer bases to at least 16 bytes (and is little-endian: chunks are reinterpreted).
Result<bool> rows_chunk_aligned(const OpenCLDevice& device, DType dtype, std::initializer_list<ClRows> views);
// build_options() plus -DDNNB_ROW_WG, -DDNNB_ROW_VECS, -DDNNB_ALIGNED and -DDNNB_ROW_PACKED
// (16-bit only), from the plan, and -DDNNB_ROW_RAW, -DDNNB_ROW_EARLY, -DDNNB_HALF_MATH=2 (16-bit
// only), -DDNNB_ROW_ONE, -DDNNB_LSE_ONLINE where the plan sets them.
std::string row_options(const OpenCLDevice& device, DType dtype, int vecs, bool aligned,
                        const RowPlan& plan = RowPlan{});
// False when this kernel cannot run `wg` items on this device (its register use may lower
// CL_KERNEL_WORK_GROUP_SIZE): the caller then takes its other kernel.
Result<bool> row_kernel_fits(OpenCLDevice& device, cl_kernel kernel, size_t wg = kRowWorkGroup);
// Kernel `name` of program `program_name`, built by row_options() for `vecs` chunks per item
// (typed 16-byte accesses when every view is chunk-aligned, `extra_options` appended; for a raw
// plan, -DDNNB_ROW_EXACT=1 when the first view's cols is plan.wg * chunk width * vecs); nullptr
// when it cannot run plan.wg items on this device (the caller then takes its other kernel).
Result<cl_kernel> row_cached_kernel(OpenCLDevice& device, const std::string& program_name, const std::string& source,
                                    const char* name, DType dtype, int vecs, std::initializer_list<ClRows> views,
                                    const RowPlan& plan = RowPlan{}, const std::string& extra_options = "");
// One work-group of `wg` items per row (grid-stride beyond kMaxGroups rows); refuses a kernel
// compiled for another work-group size.
Status launch_row_cached(OpenCLDevice& device, cl_kernel kernel, int64_t rows, const std::string& what,
                         size_t wg = kRowWorkGroup);
// Largest row (in columns) the int column math of row_body.cl accepts.
constexpr int64_t kRowMaxCols = int64_t{1} << 30;

// Registers the default implementation of `op` on backend "opencl"; supports() checks the dtype
// and that the device is an OpenCL device.
bool register_opencl(const std::string& op, std::vector<DType> dtypes, std::function<Status(OpCall&)> run);
// Registers an alternative: `variant` names it, `when` is its one sentence saying when a user
// would choose it (Implementation::when). False, with a message, when `when` is empty.
bool register_opencl(const std::string& op, const std::string& variant, const std::string& when,
                     std::vector<DType> dtypes, std::function<Status(OpCall&)> run);

// Dtypes of family 1 (f32, f16, bf16).
const std::vector<DType>& float_dtypes();

}  // namespace dnnb::opencl
