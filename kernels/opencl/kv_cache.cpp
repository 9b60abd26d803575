// kv_cache on OpenCL (kv_cache.cl): kv_store writes the token's k and v rows into the caches at
// pos[b] (bit-exact with reference::store_cache_row), kv_decode scores one split of positions of
// one (b, kv head) for all the group's query heads with an online softmax in f32 and leaves the
// split's (m, l, acc) in device scratch, kv_combine merges the splits of each (b, head) into o.
// The three are enqueued in this order on the device's in-order queue, so the attention reads
// the stored token. The caches stay on the device (they are the op's state); q, k, v and o are
// read through their strides.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/opencl/kv_cache_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb::opencl {
namespace {

// kv_view in kv_cache.cl, field for field.
struct ClKvView {
  cl_long offset = 0, sb = 0, sh = 0, se = 0;
};
static_assert(sizeof(ClKvView) == 4 * sizeof(cl_long), "ClKvView must match kv_view in kv_cache.cl");

// kv_dims in kv_cache.cl, field for field.
struct ClKvDims {
  cl_long batch, heads, kv_heads, capacity, splits, split_len;
  cl_long window;
};
static_assert(sizeof(ClKvDims) == 7 * sizeof(cl_long), "ClKvDims must match kv_dims in kv_cache.cl");

ClKvView kv_view(const Tensor& t) { return ClKvView{t.offset, t.strides[0], t.strides[1], t.strides[2]}; }

constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxDecodeWorkGroup = 256;
constexpr int64_t kMaxHeadsPerItem = 16;  // float4 accumulators per item (registers)
constexpr size_t kLocalCap = size_t{48} << 10;  // NVIDIA's static local memory per work-group

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How kv_decode runs (the build options of kv_cache.cl, and the split of positions).
struct KvPlan {
  int64_t d4 = 1, g = 1;   // head dim / 4, query heads per kv head
  int64_t tk = 64;         // keys per tile
  int64_t wg = 128;        // d4 * hs * ks items
  int64_t hs = 1, ks = 1;  // head slots and key slots of the accumulation
  int64_t hps = 1;         // heads per item when scoring
  int64_t kt4 = 0;         // float4 of the key tile (also the final reduction's scratch when ks > 1)
  int64_t split_len = 0, splits = 1;

  size_t local_bytes() const { return static_cast<size_t>(16 * (g * d4 + kt4) + 4 * g * (tk + 2 + ks)); }
  std::string options() const {
    return "-DKV_D4=" + std::to_string(d4) + " -DKV_G=" + std::to_string(g) + " -DKV_TK=" + std::to_string(tk) +
           " -DKV_WG=" + std::to_string(wg) + " -DKV_HS=" + std::to_string(hs) + " -DKV_KS=" + std::to_string(ks) +
           " -DKV_HPS=" + std::to_string(hps) + " -DKV_KT4=" + std::to_string(kt4);
  }
};

// Work-group: the d4 columns times hs head slots (enough that an item accumulates at most 8
// heads) times ks key slots, about 128 items on a GPU and 64 on a CPU (PoCL runs a group's items
// as loops; fewer items, fewer trips through each barrier region). Key tile: the largest of 64,
// 32, 16, 8 rows whose local memory fits 48 KiB. Splits: enough work-groups for the device
// (8 per compute unit on a GPU, 4 on a CPU) over B x KV, at least 256 positions each, a whole
// number of tiles. Test switches (read on every call): DNNB_OPENCL_KV_SPLIT=<positions> sets the
// split length (small splits run the combine over many splits on any device);
// DNNB_OPENCL_KV_PLAN=gpu or =cpu takes that device type's work-group and split rules anywhere.
Result<KvPlan> kv_plan(const OpenCLDevice& device, const ops::KvCacheDesc& d) {
  cl_device_type type = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_TYPE, sizeof(type), &type, nullptr));
  bool cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  if (const char* force = std::getenv("DNNB_OPENCL_KV_PLAN")) {
    if (std::strcmp(force, "gpu") == 0) cpu = false;
    if (std::strcmp(force, "cpu") == 0) cpu = true;
  }
  cl_uint units = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, nullptr));
  KvPlan p;
  p.d4 = d.d / 4;
  p.g = d.group();
  const int64_t target = cpu ? 64 : 128;
  int64_t slots = std::max<int64_t>(1, target / p.d4);
  p.hs = std::min(p.g, ceil_div(p.g, 8));
  if (p.hs > slots) slots = p.hs;
  while (p.d4 * slots > kMaxDecodeWorkGroup && slots > 1) --slots;
  p.hs = std::min(p.hs, slots);
  if (ceil_div(p.g, p.hs) > kMaxHeadsPerItem)
    return Status::unsupported("opencl kv_cache: " + std::to_string(p.g) + " query heads per kv head at D=" +
                               std::to_string(d.d) + " need more than " + std::to_string(kMaxHeadsPerItem) +
                               " accumulators per work-item");
  p.ks = slots / p.hs;
  p.wg = p.d4 * p.hs * p.ks;
  const size_t cap = std::min(device.local_mem_size(), kLocalCap);
  bool fits = false;
  for (int64_t tk : {64, 32, 16, 8}) {
    p.tk = tk;
    p.kt4 = std::max(tk * (p.d4 + 1), p.ks > 1 ? p.ks * p.g * p.d4 : 0);
    if (p.local_bytes() <= cap) {
      fits = true;
      break;
    }
  }
  if (!fits)
    return Status::unsupported("opencl kv_cache: D=" + std::to_string(d.d) + " with " + std::to_string(p.g) +
                               " query heads per kv head needs " + std::to_string(p.local_bytes()) +
                               " bytes of local memory at 8-key tiles, over the " + std::to_string(cap) + " it takes");
  p.hps = std::clamp<int64_t>(ceil_div(p.g * p.tk, p.wg), 1, std::min<int64_t>(p.g, 8));

  int64_t split_len = 0;
  if (const char* force = std::getenv("DNNB_OPENCL_KV_SPLIT")) split_len = std::atoll(force);
  if (split_len <= 0) {
    const int64_t groups = static_cast<int64_t>(std::max<cl_uint>(units, 1)) * (cpu ? 4 : 8);
    const int64_t most = std::max<int64_t>(1, ceil_div(d.capacity, std::max<int64_t>(256, p.tk)));
    const int64_t splits = std::clamp<int64_t>(ceil_div(groups, d.batch * d.kv_heads), 1, most);
    split_len = ceil_div(d.capacity, splits);
  }
  p.split_len = ceil_div(split_len, p.tk) * p.tk;
  p.splits = ceil_div(d.capacity, p.split_len);
  return p;
}

const char* cache_option(DType cache) {
  switch (cache) {
    case DType::f32: return "-DKV_CACHE_F32";
    case DType::f16: return "-DKV_CACHE_F16";
    case DType::bf16: return "-DKV_CACHE_BF16";
    case DType::f8_e4m3fn: return "-DKV_CACHE_E4M3";
    case DType::q8_0: return "-DKV_CACHE_Q8_0";
    default: return nullptr;
  }
}

// The operands against the signature (suites/ops/kv_cache.cpp): shapes, dtypes, contiguous caches.
Status check_call(const OpCall& call, const ops::KvCacheDesc& d) {
  const size_t n_in = d.scaled() ? 8 : 6;
  if (call.inputs.size() != n_in || call.outputs.size() != 1)
    return Status::bad_input("opencl kv_cache: " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has " +
                             std::to_string(n_in) + " and 1");
  auto check = [](const Tensor& t, const char* name, DType dtype, const Shape& shape) -> Status {
    if (t.dtype != dtype || t.shape != shape)
      return Status::bad_input(std::string("opencl kv_cache: ") + name + " is " + t.describe() +
                               ", the signature's is " + shape_to_string(shape) + " " + dtype_name(dtype));
    return Status::ok();
  };
  const DType dt = call.problem.dtype;
  DNNB_TRY(check(call.inputs[0], "q", dt, ops::kv_cache_q_shape(d)));
  DNNB_TRY(check(call.inputs[1], "k", dt, ops::kv_cache_token_shape(d)));
  DNNB_TRY(check(call.inputs[2], "v", dt, ops::kv_cache_token_shape(d)));
  DNNB_TRY(check(call.inputs[3], "pos", DType::i32, {d.batch}));
  DNNB_TRY(check(call.inputs[4], "k_cache", d.cache, ops::kv_cache_cache_shape(d)));
  DNNB_TRY(check(call.inputs[5], "v_cache", d.cache, ops::kv_cache_cache_shape(d)));
  if (d.scaled()) {
    DNNB_TRY(check(call.inputs[6], "k_scale", DType::f32, {1}));
    DNNB_TRY(check(call.inputs[7], "v_scale", DType::f32, {1}));
  }
  DNNB_TRY(check(call.outputs[0], "o", dt, ops::kv_cache_q_shape(d)));
  for (int i : {4, 5})
    if (!call.inputs[i].is_contiguous())
      return Status::unsupported("opencl kv_cache: the kernels address a cache as contiguous rows; " +
                                 call.inputs[i].describe() + " is not");
  return Status::ok();
}

Status run_kv_cache(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::kv_cache_desc(call.problem);
  if (!d) return d.status();
  DNNB_TRY(check_call(call, *d));
  const char* cache_flag = cache_option(d->cache);
  if (cache_flag == nullptr)
    return Status::unsupported(std::string("opencl kv_cache: no cache of dtype ") + dtype_name(d->cache));
  if (d->d % 4 != 0 || d->d > kMaxHeadDim)
    return Status::unsupported("opencl kv_cache: head dim D=" + std::to_string(d->d) +
                               " (the kernels take multiples of 4 up to " + std::to_string(kMaxHeadDim) + ")");
  if (d->cache == DType::f8_e4m3fn || d->cache == DType::q8_0) {
    // The store divides in f32 (x / scale; amax / 127 and 1 / d) and must round as the host does.
    cl_device_fp_config fp = 0;
    DNNB_CL_TRY(clGetDeviceInfo((*device)->device_id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr));
    if ((fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) == 0)
      return Status::unsupported(std::string("opencl kv_cache: a ") + dtype_name(d->cache) +
                                 " cache stores through f32 division, and this device has no correctly rounded "
                                 "divide (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)");
  }
  auto plan = kv_plan(**device, *d);
  if (!plan) return plan.status();

  const Tensor& q = call.inputs[0];
  const Tensor& k = call.inputs[1];
  const Tensor& v = call.inputs[2];
  const Tensor& pos = call.inputs[3];
  const Tensor& k_cache = call.inputs[4];
  const Tensor& v_cache = call.inputs[5];
  const Tensor& k_scale = d->scaled() ? call.inputs[6] : pos;  // not read without f8_e4m3fn
  const Tensor& v_scale = d->scaled() ? call.inputs[7] : pos;
  const Tensor& o = call.outputs[0];
  if (o.numel() == 0) return Status::ok();

  // build_options adds -cl-fp32-correctly-rounded-divide-sqrt where the device has it.
  static const std::string source = program_source({opencl_source::kv_cache});
  const std::string options = build_options(**device, call.problem.dtype, std::string(cache_flag) + " " + plan->options() +
                                                                             (d->softcap > 0 ? " -DKV_SOFTCAP" : ""));
  auto store = opencl_kernel(**device, "kv_cache", source, "kv_store", options);
  if (!store) return store.status();
  auto decode = opencl_kernel(**device, "kv_cache", source, "kv_decode", options);
  if (!decode) return decode.status();
  auto combine = opencl_kernel(**device, "kv_cache", source, "kv_combine", options);
  if (!combine) return combine.status();

  const ClKvDims dims{d->batch, d->heads, d->kv_heads, d->capacity, plan->splits, plan->split_len, d->window};
  const cl_long pos_offset = pos.offset, pos_stride = pos.strides[0];
  const cl_long kc_offset = static_cast<cl_long>(storage_bytes(d->cache, k_cache.offset));
  const cl_long vc_offset = static_cast<cl_long>(storage_bytes(d->cache, v_cache.offset));
  const cl_long ks_offset = k_scale.offset, vs_offset = v_scale.offset;
  const size_t parts = static_cast<size_t>(d->batch * d->heads * plan->splits);
  auto ws = (*device)->scratch(parts * static_cast<size_t>(2 + d->d) * sizeof(cl_float));
  if (!ws) return ws.status();

  KernelArgs store_args(*store);
  store_args.add(cl_buffer(k)).add(kv_view(k)).add(cl_buffer(v)).add(kv_view(v));
  store_args.add(cl_buffer(pos)).add(pos_offset).add(pos_stride);
  store_args.add(cl_buffer(k_cache)).add(kc_offset).add(cl_buffer(v_cache)).add(vc_offset);
  store_args.add(cl_buffer(k_scale)).add(ks_offset).add(cl_buffer(v_scale)).add(vs_offset).add(dims);
  DNNB_TRY(store_args.status());
  auto store_limit = work_group_limit(**device, *store, 64);
  if (!store_limit) return store_limit.status();
  const size_t store_local = *store_limit;
  const size_t store_global = static_cast<size_t>(d->batch * d->kv_heads) * store_local;
  DNNB_TRY(enqueue(**device, *store, 1, &store_global, &store_local, "kv_cache/kv_store"));

  KernelArgs decode_args(*decode);
  decode_args.add(cl_buffer(q)).add(kv_view(q)).add(cl_buffer(pos)).add(pos_offset).add(pos_stride);
  decode_args.add(cl_buffer(k_cache)).add(kc_offset).add(cl_buffer(v_cache)).add(vc_offset);
  decode_args.add(cl_buffer(k_scale)).add(ks_offset).add(cl_buffer(v_scale)).add(vs_offset);
  decode_args.add(*ws).add(dims).add(static_cast<cl_float>(d->scale)).add(static_cast<cl_float>(d->softcap));
  DNNB_TRY(decode_args.status());
  const size_t decode_local = static_cast<size_t>(plan->wg);
  auto fits = row_kernel_fits(**device, *decode, decode_local);
  if (!fits) return fits.status();
  if (!*fits)
    return Status::unsupported("opencl kv_cache: kv_decode cannot run work-groups of " + std::to_string(decode_local) +
                               " items on this device");
  const size_t decode_global = static_cast<size_t>(d->batch * d->kv_heads * plan->splits) * decode_local;
  DNNB_TRY(enqueue(**device, *decode, 1, &decode_global, &decode_local, "kv_cache/kv_decode"));

  KernelArgs combine_args(*combine);
  combine_args.add(cl_buffer(pos)).add(pos_offset).add(pos_stride).add(*ws).add(cl_buffer(o)).add(kv_view(o)).add(dims);
  DNNB_TRY(combine_args.status());
  auto combine_limit = work_group_limit(**device, *combine, 64);
  if (!combine_limit) return combine_limit.status();
  const size_t combine_local = std::min(*combine_limit, static_cast<size_t>(plan->d4));
  const size_t combine_global = static_cast<size_t>(d->batch * d->heads) * combine_local;
  return enqueue(**device, *combine, 1, &combine_global, &combine_local, "kv_cache/kv_combine");
}

bool register_kv_cache() { return register_opencl("kv_cache", float_dtypes(), run_kv_cache); }

}  // namespace
DNNB_REGISTER(register_kv_cache());
}  // namespace dnnb::opencl
