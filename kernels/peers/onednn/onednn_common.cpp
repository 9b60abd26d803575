#include "kernels/peers/onednn/onednn_common.h"

#include "core/bench.h"
#include "devices/cpu/cpu_features.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>

#include <oneapi/dnnl/dnnl_debug.h>

namespace dnnb::onednn {

Layout layout_of(const Tensor& t) { return {t.dtype, t.shape, t.strides}; }

Layout layout_of(const TensorSpec& spec) {
  // Same construction as the harness: storage of permuted shape, last storage dim padded,
  // then the logical view permuted back.
  const int n = static_cast<int>(spec.shape.size());
  std::vector<int> order = spec.storage_order;
  if (order.empty()) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
  }
  Shape storage(n);
  for (int i = 0; i < n; ++i) storage[i] = spec.shape[order[i]];
  if (n > 0) storage[n - 1] += spec.row_padding;
  const Shape storage_strides = contiguous_strides(storage);
  Layout l{spec.dtype, spec.shape, Shape(n)};
  for (int i = 0; i < n && i < static_cast<int>(order.size()); ++i) l.strides[order[i]] = storage_strides[i];
  return l;
}

namespace {
Result<dnnl::memory::data_type> data_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return dnnl::memory::data_type::f32;
    case DType::f16: return dnnl::memory::data_type::f16;
    case DType::bf16: return dnnl::memory::data_type::bf16;
    case DType::i32: return dnnl::memory::data_type::s32;
    case DType::i8: return dnnl::memory::data_type::s8;
    case DType::u8: return dnnl::memory::data_type::u8;
    default: return Status::unsupported(std::string("onednn has no data type for ") + dtype_name(dtype));
  }
}
}  // namespace

Result<dnnl::memory::desc> memory_desc(const Layout& layout, int ndims) {
  auto dt = data_type_of(layout.dtype);
  if (!dt) return dt.status();
  const int rank = static_cast<int>(layout.shape.size());
  const int n = std::max({ndims, rank, 1});
  dnnl::memory::dims dims(n, 1), strides(n, 0);
  for (int i = 0; i < rank; ++i) {
    dims[n - rank + i] = layout.shape[i];
    strides[n - rank + i] = layout.strides[i];
  }
  // oneDNN wants strides of a real layout: size-1 dims (and padding dims) get the stride a
  // dense layout would give them, which addresses the same elements.
  for (int i = n - 1; i >= 0; --i) {
    if (dims[i] != 1) continue;
    int64_t inner = 1;
    for (int j = i + 1; j < n; ++j) inner = std::max(inner, dims[j] * strides[j]);
    strides[i] = inner;
  }
  for (int i = 0; i < n; ++i)
    if (strides[i] == 0)
      return Status::unsupported("onednn: tensor of shape " + shape_to_string(layout.shape) +
                                 " repeats elements (stride 0), which a memory::desc cannot express");
  return dnnl::memory::desc(dims, *dt, strides);
}

Result<dnnl::memory::desc> memory_desc(DType dtype, const Shape& shape) {
  return memory_desc(Layout{dtype, shape, contiguous_strides(shape)});
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

namespace {
dnnl::stream& cpu_stream() {
  static dnnl::stream stream(cpu_engine());
  return stream;
}

std::string layout_key(const std::vector<Layout>& layouts) {
  std::string key;
  for (const auto& l : layouts) {
    key += std::string(dtype_name(l.dtype)) + ":" + shape_to_string(l.shape) + ":";
    for (int64_t s : l.strides) key += std::to_string(s) + ",";
    key += ";";
  }
  return key;
}

// Problems and layouts seen so far -> their primitive, or why oneDNN refused it.
class PrimitiveCache {
 public:
  static PrimitiveCache& instance() {
    static PrimitiveCache cache;
    return cache;
  }
  Result<std::shared_ptr<const Prepared>> get(const PeerOp& op, const Problem& problem,
                                               const std::vector<Layout>& inputs,
                                               const std::vector<Layout>& outputs) {
    const std::string key = problem.to_string() + "|" + layout_key(inputs) + "|" + layout_key(outputs);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(key);
    if (found != entries_.end()) return found->second;
    Result<std::shared_ptr<const Prepared>> made = make(op, problem, inputs, outputs);
    entries_.emplace(key, made);
    return made;
  }

 private:
  static Result<std::shared_ptr<const Prepared>> make(const PeerOp& op, const Problem& problem,
                                                      const std::vector<Layout>& inputs,
                                                      const std::vector<Layout>& outputs) {
    try {
      auto prepared = op.make(problem, inputs, outputs);
      if (!prepared) return prepared.status();
      return std::make_shared<const Prepared>(std::move(*prepared));
    } catch (const dnnl::error& e) {
      return Status::unsupported(describe(e) + " for " + problem.op + " " + dtype_name(problem.dtype));
    }
  }
  std::mutex mutex_;
  std::map<std::string, Result<std::shared_ptr<const Prepared>>> entries_;
};

Status supports(const PeerOp& op, const Problem& problem, const DeviceRuntime& device) {
  if (!device.host_accessible()) return Status::unsupported("onednn runs on the host CPU only");
  if (std::find(op.dtypes.begin(), op.dtypes.end(), problem.dtype) == op.dtypes.end())
    return Status::unsupported(std::string("onednn peer for ") + op.op + " has no " + dtype_name(problem.dtype));
  if (op.expressible) DNNB_TRY(op.expressible(problem));
  const OpSpec* spec = Registry::instance().find_op(problem.op);
  if (spec == nullptr) return Status::bad_input("onednn: unknown op " + problem.op);
  auto sig = spec->signature(problem);
  if (!sig) return sig.status();
  std::vector<Layout> inputs, outputs;
  for (const auto& t : sig->inputs) inputs.push_back(layout_of(t));
  for (const auto& t : sig->outputs) outputs.push_back(layout_of(t));
  auto prepared = PrimitiveCache::instance().get(op, problem, inputs, outputs);
  return prepared.status();
}

Status run(const PeerOp& op, OpCall& call) {
  std::vector<Layout> inputs, outputs;
  for (const auto& t : call.inputs) inputs.push_back(layout_of(t));
  for (const auto& t : call.outputs) outputs.push_back(layout_of(t));
  auto prepared = PrimitiveCache::instance().get(op, call.problem, inputs, outputs);
  if (!prepared) return prepared.status();
  try {
    return op.execute ? op.execute(call, **prepared) : execute_bound(call, **prepared);
  } catch (const dnnl::error& e) {
    return Status::error(describe(e));
  }
}
}  // namespace

std::string describe(const dnnl::error& e) {
  return std::string("oneDNN: ") + e.what() + " (" + dnnl_status2str(e.status) + ")";
}

Status execute_bound(OpCall& call, const Prepared& prepared, const std::vector<std::pair<int, dnnl::memory>>& extra) {
  std::unordered_map<int, dnnl::memory> args;
  auto bind = [&](const std::vector<std::pair<int, dnnl::memory::desc>>& descs, std::vector<Tensor>& tensors) {
    for (size_t i = 0; i < descs.size() && i < tensors.size(); ++i) {
      if (descs[i].first < 0) continue;  // an argument the op passes itself (converted)
      void* data = tensors[i].host_data();
      if (data == nullptr) return Status::bad_input("onednn: tensor " + tensors[i].describe() + " is not host memory");
      args.emplace(descs[i].first, dnnl::memory(descs[i].second, cpu_engine(), data));
    }
    return Status::ok();
  };
  DNNB_TRY(bind(prepared.inputs, call.inputs));
  DNNB_TRY(bind(prepared.outputs, call.outputs));
  for (const auto& [arg, mem] : extra) args.emplace(arg, mem);
  prepared.primitive.execute(cpu_stream(), args);
  cpu_stream().wait();
  return Status::ok();
}

bool register_peer(PeerOp op) {
  if (op.variant.empty() != op.when.empty()) {
    std::fprintf(stderr, "dnnblocks: onednn %s%s%s: %s\n", op.op.c_str(), op.variant.empty() ? "" : "/",
                 op.variant.c_str(),
                 op.variant.empty() ? "a default carries no `when` sentence" : "an alternative needs its `when` sentence");
    return false;
  }
  auto shared = std::make_shared<const PeerOp>(std::move(op));
  Implementation impl;
  impl.op = shared->op;
  impl.backend = "onednn";
  impl.variant = shared->variant;
  impl.when = shared->when;
  impl.dtypes = shared->dtypes;
  impl.supports = [shared](const Problem& p, const DeviceRuntime& d) { return supports(*shared, p, d); };
  impl.run = [shared](OpCall& call) { return run(*shared, call); };
  if (shared->compute_unit_for) impl.compute_unit_for = shared->compute_unit_for;
  // Seen on oneDNN 2.6 (Debian 12) with this suite's denormal fixtures: its bf16 eltwise,
  // binary and reduction kernels flush subnormal results to zero where torch keeps them.
  impl.known_deviations = {{"*:bf16:*fixture=denormal*",
                            "oneDNN 2.6 bf16 kernels flush subnormal outputs to zero (torch keeps them)"}};
  impl.known_deviations.insert(impl.known_deviations.end(), shared->known_deviations.begin(),
                               shared->known_deviations.end());
  return Registry::instance().add_implementation(std::move(impl));
}

std::string product_unit(const Problem& problem, const DeviceRuntime&) {
  if (problem.dtype != DType::bf16) return "f32_fma";
  const CpuFeatures& cpu = cpu_features();
  return cpu.amx_bf16_usable() ? "bf16_amx" : cpu.avx512_bf16_usable() ? "bf16_dot" : "f32_fma";
}

}  // namespace dnnb::onednn

namespace dnnb {
// The oneDNN library version actually loaded, for the results' fingerprint.
DNNB_REGISTER(register_fingerprint_item("onednn", [] {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}));
}  // namespace dnnb
