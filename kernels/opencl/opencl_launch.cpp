#include "kernels/opencl/opencl_launch.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "kernels/opencl/prelude_cl.h"

namespace dnnb::opencl {

namespace {
// Must equal DNNB_CACHE_VECS in the programs: the host picks work-group sizes from it.
constexpr int64_t kCacheVecs = 8;
// Grid caps; the kernels' grid-stride loops cover anything beyond them. 65535 is the
// per-dimension group limit of some drivers for dims 1 and 2.
constexpr size_t kMaxGroups = size_t{1} << 20;
constexpr size_t kMaxGroupsYZ = 65535;

size_t floor_pow2(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
size_t ceil_pow2(size_t v) {
  size_t p = 1;
  while (p < v) p *= 2;
  return p;
}
size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }
}  // namespace

Result<ClRows> cl_rows(const Tensor& t) {
  auto ri = row_index(t);
  if (!ri) return ri.status();
  ClRows r;
  r.offset = ri->offset;
  r.rows = ri->rows;
  r.cols = ri->cols;
  r.col_stride = ri->col_stride;
  r.outer_dims = ri->outer_dims;
  for (int d = 0; d < RowIndex::kMaxOuterDims; ++d) {
    r.size[d] = ri->size[d];
    r.stride[d] = ri->stride[d];
  }
  return r;
}

Tensor with_unit_last_dim(const Tensor& t) {
  Tensor v = t;
  v.shape.push_back(1);
  v.strides.push_back(1);
  return v;
}

std::string program_source(std::initializer_list<const char*> parts) {
  std::string source = opencl_source::prelude;
  for (const char* part : parts) {
    source += "\n";
    source += part;
  }
  return source;
}

// The bf16 store tier of prelude.cl (DNNB_NV_PTX): bf16 ops such as gelu and cross_entropy_bwd
// are instruction-bound on NVIDIA's OpenCL at the copy rate, and the portable integer rounding
// costs ~5 instructions per element; NVIDIA's OpenCL compiler takes inline PTX, where
// cvt.rn.bf16x2.f32 rounds two floats in one instruction. That cvt needs sm_80+, so the tier
// is taken only where the device says so through cl_nv_device_attribute_query
// (CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, a cl_uint); without the extension, no tier. Every
// other platform (PoCL included) keeps the portable code. Asked once per device (build_options
// runs on every bf16 call, and the vendor test is three OpenCL queries and a string).
bool bf16_nv_ptx(const OpenCLDevice& device) {
  static std::mutex mutex;
  static std::map<cl_device_id, bool> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(device.device_id()); it != cache.end()) return it->second;
  bool tier = false;
  if (is_nvidia(device) && device.has_extension("cl_nv_device_attribute_query")) {
    constexpr cl_device_info kComputeCapabilityMajorNV = 0x4000;  // CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
    cl_uint major = 0;
    tier = clGetDeviceInfo(device.device_id(), kComputeCapabilityMajorNV, sizeof(major), &major, nullptr) ==
               CL_SUCCESS &&
           major >= 8;
  }
  cache[device.device_id()] = tier;
  return tier;
}

std::string build_options(const OpenCLDevice& device, DType dtype, const std::string& extra) {
  std::string options;
  switch (dtype) {
    case DType::f32: options = "-DDNNB_F32"; break;
    case DType::f16: options = "-DDNNB_F16"; break;
    case DType::bf16: options = "-DDNNB_BF16"; break;
    default: options = "-DDNNB_UNSUPPORTED_DTYPE"; break;
  }
  options += " -DDNNB_CACHE_VECS=" + std::to_string(kCacheVecs);
  cl_device_fp_config fp = 0;
  if (clGetDeviceInfo(device.device_id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr) == CL_SUCCESS &&
      (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT))
    options += " -cl-fp32-correctly-rounded-divide-sqrt";
  if (dtype == DType::bf16 && bf16_nv_ptx(device)) options += " -DDNNB_NV_PTX=1";
  if (!extra.empty()) options += " " + extra;
  options += dump_build_options(device);
  return options;
}

Result<OpenCLDevice*> opencl_device(OpCall& call) {
  auto* device = dynamic_cast<OpenCLDevice*>(&call.device);
  if (device == nullptr)
    return Status::bad_input("opencl kernel of " + call.problem.op + " called on " + call.device.info().id +
                             ", which is not an OpenCL device");
  return device;
}

void KernelArgs::set(size_t size, const void* value) {
  if (!status_.is_ok()) return;
  cl_int err = clSetKernelArg(kernel_, index_, size, value);
  if (err != CL_SUCCESS)
    status_ = opencl_status(err, ("clSetKernelArg(index " + std::to_string(index_) + ")").c_str(), __FILE__,
                            __LINE__);
  ++index_;
}

Result<size_t> work_group_limit(OpenCLDevice& device, cl_kernel kernel, size_t cap) {
  size_t kernel_max = 0;
  DNNB_CL_TRY(clGetKernelWorkGroupInfo(kernel, device.device_id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(kernel_max),
                                       &kernel_max, nullptr));
  size_t limit = std::min({kernel_max, device.max_work_group_size(), cap});
  return floor_pow2(std::max<size_t>(limit, 1));
}

Status enqueue(OpenCLDevice& device, cl_kernel kernel, cl_uint dims, const size_t* global, const size_t* local,
               const std::string& what) {
  cl_int err = clEnqueueNDRangeKernel(device.queue(), kernel, dims, nullptr, global, local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string geometry = "global " + std::to_string(global[0]);
    for (cl_uint d = 1; d < dims; ++d) geometry.append("x").append(std::to_string(global[d]));
    geometry += ", local " + std::to_string(local[0]);
    for (cl_uint d = 1; d < dims; ++d) geometry.append("x").append(std::to_string(local[d]));
    return opencl_status(err, ("clEnqueueNDRangeKernel(" + what + ", " + geometry + ")").c_str(), __FILE__,
                         __LINE__);
  }
  return Status::ok();
}

Status launch_flat(OpenCLDevice& device, cl_kernel kernel, int64_t n, const std::string& what, int64_t per_item) {
  if (n <= 0) return Status::ok();
  auto limit = work_group_limit(device, kernel, 256);
  if (!limit) return limit.status();
  const size_t local = *limit;
  const size_t items = ceil_div(static_cast<size_t>(n), static_cast<size_t>(per_item));
  const size_t groups = std::min(ceil_div(items, local), kMaxGroups);
  const size_t global = groups * local;
  return enqueue(device, kernel, 1, &global, &local, what);
}

Status launch_elementwise_rows(OpenCLDevice& device, cl_kernel kernel, int64_t rows, int64_t cols,
                               const std::string& what, int64_t per_item) {
  if (rows <= 0 || cols <= 0) return Status::ok();
  auto limit = work_group_limit(device, kernel, 256);
  if (!limit) return limit.status();
  const size_t vecs = ceil_div(static_cast<size_t>(cols), static_cast<size_t>(per_item));
  size_t local[2];
  local[0] = std::min(*limit, ceil_pow2(vecs));
  local[1] = std::min(*limit / local[0], ceil_pow2(static_cast<size_t>(rows)));
  size_t global[2];
  global[0] = std::min(ceil_div(vecs, local[0]), kMaxGroups) * local[0];
  global[1] = std::min(ceil_div(static_cast<size_t>(rows), local[1]), kMaxGroupsYZ) * local[1];
  return enqueue(device, kernel, 2, global, local, what);
}

Result<RowGeometry> row_geometry(OpenCLDevice& device, cl_kernel kernel, int64_t rows, int64_t cols) {
  auto limit = work_group_limit(device, kernel, 1024);
  if (!limit) return limit.status();
  const size_t vecs = ceil_div(static_cast<size_t>(std::max<int64_t>(cols, 1)), 4);
  // Enough items for the row to fit the register cache, and up to 256 for parallelism.
  const size_t to_fit = ceil_pow2(ceil_div(vecs, static_cast<size_t>(kCacheVecs)));
  const size_t for_parallelism = std::min<size_t>(ceil_pow2(vecs), 256);
  RowGeometry g;
  g.local = std::min(*limit, std::max(to_fit, for_parallelism));
  g.global = std::min(static_cast<size_t>(std::max<int64_t>(rows, 1)), kMaxGroups) * g.local;
  return g;
}

Status launch_rows(OpenCLDevice& device, cl_kernel kernel, const RowGeometry& geometry, const std::string& what) {
  return enqueue(device, kernel, 1, &geometry.global, &geometry.local, what);
}

int64_t row_chunk_width(DType dtype) { return dtype == DType::f32 ? 4 : 8; }

RowPlans without_fast_exp(RowPlans plans) {
  plans.f32.fast_exp = plans.f16.fast_exp = plans.bf16.fast_exp = false;
  return plans;
}

Result<cl_kernel> row_cached_kernel(OpenCLDevice& device, const std::string& program_name, const std::string& source,
                                    const char* name, DType dtype, int vecs, std::initializer_list<ClRows> views,
                                    const RowPlan& plan, const std::string& extra_options) {
  auto aligned = rows_chunk_aligned(device, dtype, views);
  if (!aligned) return aligned.status();
  std::string options = row_options(device, dtype, vecs, *aligned, plan) + extra_options;
  // Raw plans: a row of exactly `vecs` full chunks per work-item (the first view is the row
  // every view shares the length of) compiles without bounds tests (DNNB_ROW_EXACT).
  if (plan.raw && views.size() > 0 &&
      views.begin()->cols == static_cast<int64_t>(plan.wg) * row_chunk_width(dtype) * vecs)
    options += " -DDNNB_ROW_EXACT=1";
  auto kernel = opencl_kernel(device, program_name, source, name, options);
  if (!kernel) return kernel.status();
  auto fits = row_kernel_fits(device, *kernel, plan.wg);
  if (!fits) return fits.status();
  return *fits ? *kernel : nullptr;
}

bool register_row_op(const std::string& op, const std::vector<DType>& dtypes, const RowPlans& plans,
                     const std::string& source, RowOpRun run, RowOpRun default_run) {
  const RowOpRun run_default = default_run != nullptr ? default_run : run;
  bool ok = register_opencl(op, dtypes, [source, plans, run_default](OpCall& call) {
    return run_default(call, source, plans(call.problem.dtype));
  });
  // The alternative exists for the dtypes whose default plan takes the fast exp (never f32).
  std::vector<DType> fast;
  for (DType dtype : dtypes)
    if (dtype != DType::f32 && plans(dtype).fast_exp) fast.push_back(dtype);
  if (!fast.empty()) {
    const RowPlans portable = without_fast_exp(plans);
    ok = register_opencl(op, "portable_math",
                         "On a device whose native_exp2 dnnb_opencl_math_tests has not checked: 16-bit rows with the "
                         "built-in exp (and round-to-nearest-even bf16 stores) instead of native_exp2, at a few "
                         "more instructions per element",
                         fast, [source, portable, run](OpCall& call) {
                           return run(call, source, portable(call.problem.dtype));
                         }) &&
         ok;
  }
  return ok;
}

bool row_fills_work_group(DType dtype, int64_t cols, size_t wg) {
  return cols >= static_cast<int64_t>(wg) * row_chunk_width(dtype) / 4;
}

int row_cache_vecs(DType dtype, int64_t cols, const RowPlan& plan) {
  if (!row_fills_work_group(dtype, cols, plan.wg)) return 0;
  const int64_t width = row_chunk_width(dtype);
  const int regs_per_chunk = dtype == DType::f32 || plan.packed ? 4 : 8;
  for (int vecs = 1; vecs * regs_per_chunk <= plan.max_regs; vecs *= 2)
    if (cols <= static_cast<int64_t>(plan.wg) * width * vecs) return vecs;
  return 0;
}

Result<bool> rows_chunk_aligned(const OpenCLDevice& device, DType dtype, std::initializer_list<ClRows> views) {
  cl_uint base_align_bits = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(base_align_bits),
                              &base_align_bits, nullptr));
  cl_bool little_endian = CL_FALSE;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_ENDIAN_LITTLE, sizeof(little_endian), &little_endian,
                              nullptr));
  if (base_align_bits < 128 || little_endian != CL_TRUE) return false;
  const int64_t width = row_chunk_width(dtype);
  for (const ClRows& v : views) {
    if (v.col_stride != 1 || v.offset % width != 0) return false;
    for (cl_long d = 0; d < v.outer_dims; ++d)
      if (v.size[d] > 1 && v.stride[d] % width != 0) return false;
  }
  return true;
}

std::string row_options(const OpenCLDevice& device, DType dtype, int vecs, bool aligned, const RowPlan& plan) {
  const bool packed = plan.packed && dtype != DType::f32;  // f32 has nothing to pack
  return build_options(device, dtype,
                       "-DDNNB_ROW_WG=" + std::to_string(plan.wg) + " -DDNNB_ROW_VECS=" + std::to_string(vecs) +
                           " -DDNNB_ALIGNED=" + (aligned ? "1" : "0") + " -DDNNB_ROW_PACKED=" + (packed ? "1" : "0") +
                           (plan.raw ? " -DDNNB_ROW_RAW=1" : "") + (plan.early ? " -DDNNB_ROW_EARLY=1" : "") +
                           // the 16-bit tier's exp; f32 programs keep the built-in one (prelude.cl)
                           (plan.fast_exp && dtype != DType::f32 ? " -DDNNB_HALF_MATH=2" : "") +
                           (plan.one_reduction ? " -DDNNB_ROW_ONE=1" : "") + (plan.online ? " -DDNNB_LSE_ONLINE=1" : ""));
}

Result<bool> row_kernel_fits(OpenCLDevice& device, cl_kernel kernel, size_t wg) {
  size_t kernel_max = 0;
  DNNB_CL_TRY(clGetKernelWorkGroupInfo(kernel, device.device_id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(kernel_max),
                                       &kernel_max, nullptr));
  return kernel_max >= wg && device.max_work_group_size() >= wg;
}

Status launch_row_cached(OpenCLDevice& device, cl_kernel kernel, int64_t rows, const std::string& what, size_t wg) {
  if (rows <= 0) return Status::ok();
  // The kernel's local arrays and reductions are sized for exactly the compiled work-group
  // size: refuse a kernel built for another size rather than let it index past them.
  size_t compiled[3] = {0, 0, 0};
  DNNB_CL_TRY(clGetKernelWorkGroupInfo(kernel, device.device_id(), CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
                                       sizeof(compiled), compiled, nullptr));
  if (compiled[0] != wg || compiled[1] != 1 || compiled[2] != 1)
    return DNNB_ERROR(what + ": kernel compiled for work-group " + std::to_string(compiled[0]) + "x" +
                      std::to_string(compiled[1]) + "x" + std::to_string(compiled[2]) + ", launch needs " +
                      std::to_string(wg) + "x1x1");
  const size_t groups = std::min(static_cast<size_t>(rows), kMaxGroups);
  const size_t local = wg;
  const size_t global = groups * local;
  return enqueue(device, kernel, 1, &global, &local, what);
}

const std::vector<DType>& float_dtypes() {
  static const std::vector<DType> list = {DType::f32, DType::f16, DType::bf16};
  return list;
}

namespace {
Implementation opencl_implementation(const std::string& op, const std::string& variant, const std::string& when,
                                     std::vector<DType> dtypes, std::function<Status(OpCall&)> run) {
  Implementation impl;
  impl.op = op;
  impl.backend = "opencl";
  impl.variant = variant;
  impl.when = when;
  impl.dtypes = dtypes;
  impl.supports = [op, dtypes](const Problem& problem, const DeviceRuntime& device) -> Status {
    if (dynamic_cast<const OpenCLDevice*>(&device) == nullptr)
      return Status::skipped(device.info().id + " is not an OpenCL device");
    if (std::find(dtypes.begin(), dtypes.end(), problem.dtype) == dtypes.end())
      return Status::unsupported(std::string("opencl ") + op + " has no " + dtype_name(problem.dtype) + " kernel");
    return Status::ok();
  };
  impl.run = std::move(run);
  return impl;
}
}  // namespace

bool register_opencl(const std::string& op, std::vector<DType> dtypes, std::function<Status(OpCall&)> run) {
  return Registry::instance().add_implementation(opencl_implementation(op, "", "", std::move(dtypes), std::move(run)));
}

bool register_opencl(const std::string& op, const std::string& variant, const std::string& when,
                     std::vector<DType> dtypes, std::function<Status(OpCall&)> run) {
  if (variant.empty() || when.empty()) {
    std::fprintf(stderr, "dnnblocks: opencl %s: an alternative needs a name and its one sentence (when); not registered\n",
                 op.c_str());
    return false;
  }
  return Registry::instance().add_implementation(
      opencl_implementation(op, variant, when, std::move(dtypes), std::move(run)));
}

}  // namespace dnnb::opencl
