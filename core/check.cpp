#include "core/check.h"

#include <fnmatch.h>

#include <algorithm>
#include <optional>

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/host_device.h"
#include "core/plan.h"
#include "core/safetensors.h"

namespace dnnb {

const char* CaseResult::verdict() const {
  if (timed_out) return "TIMEOUT";
  switch (status) {
    case StatusCode::ok: return "PASS";
    case StatusCode::mismatch: return known_deviation.empty() ? "FAIL" : "XFAIL";
    case StatusCode::error: return "ERROR";
    case StatusCode::skipped: return "SKIP";
    case StatusCode::unsupported: return "UNSUPPORTED";
    case StatusCode::bad_input: return "BAD_INPUT";
  }
  return "?";
}

const char* to_string(CheckTier tier) {
  switch (tier) {
    case CheckTier::smoke: return "smoke";
    case CheckTier::ci: return "ci";
    case CheckTier::full: return "full";
  }
  return "?";
}

Result<CheckTier> parse_check_tier(const std::string& text) {
  for (CheckTier t : {CheckTier::smoke, CheckTier::ci, CheckTier::full})
    if (text == to_string(t)) return t;
  return Status::bad_input("--tier: unknown tier '" + text + "' (smoke, ci or full)");
}

namespace {

bool glob_match(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Default random inputs: normal(0,1) rounded through each input's dtype.
Status fill_normal(const Problem&, std::vector<Tensor>& inputs, Rng& rng) {
  for (auto& t : inputs) {
    void* data = t.host_data();
    for (int64_t i = 0; i < t.numel(); ++i) store_element(data, t.dtype, i, rng.normal());
  }
  return Status::ok();
}

double rms_of(const Tensor& f64) {
  const auto* d = static_cast<const double*>(f64.host_data());
  double s = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < f64.numel(); ++i)
    if (std::isfinite(d[i])) {
      s += d[i] * d[i];
      ++n;
    }
  return n ? std::sqrt(s / n) : 0;
}

// dot_product ops: for each output, the rms of its elements' magnitude sums |a||b|, from the
// reference run on the inputs' absolute values.
Result<std::vector<double>> magnitude_rms(const OpSpec& spec, const Problem& problem, const Signature& sig,
                                          const std::vector<Tensor>& inputs) {
  HostDevice& host = scratch_host();
  std::vector<Tensor> absolute;
  for (const Tensor& in : inputs) {
    if (!is_floating(in.dtype)) {
      absolute.push_back(in);
      continue;
    }
    auto t = empty_tensor(host, DType::f64, in.shape);
    if (!t) return t.status();
    auto* d = static_cast<double*>(t->host_data());
    for (int64_t i = 0; i < in.numel(); ++i) d[i] = std::fabs(load_element(in.host_data(), in.dtype, i));
    absolute.push_back(*t);
  }
  std::vector<Tensor> sums;
  for (const auto& out : sig.outputs) {
    auto t = empty_tensor(host, DType::f64, out.shape);
    if (!t) return t.status();
    sums.push_back(*t);
  }
  DNNB_TRY(spec.reference(problem, absolute, sums));
  std::vector<double> rms;
  for (const Tensor& t : sums) rms.push_back(rms_of(t));
  return rms;
}

}  // namespace

// Device storage for one input: permuted and/or row-padded as the spec asks, returned as the
// logical (possibly non-contiguous) view.
Result<Tensor> make_device_input(DeviceRuntime& device, const TensorSpec& spec) {
  const int n = static_cast<int>(spec.shape.size());
  std::vector<int> order = spec.storage_order;
  if (order.empty()) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
  }
  if (static_cast<int>(order.size()) != n) return Status::bad_input("tensor " + spec.name + ": storage_order rank mismatch");
  Shape storage(n);
  for (int i = 0; i < n; ++i) storage[i] = spec.shape[order[i]];
  if (n > 0) storage[n - 1] += spec.row_padding;
  auto st = empty_tensor(device, spec.dtype, storage);
  if (!st) return st.status();
  Tensor view = *st;
  if (n > 0 && spec.row_padding > 0) {
    auto sliced = view.slice(n - 1, 0, storage[n - 1] - spec.row_padding);
    if (!sliced) return sliced.status();
    view = *sliced;
  }
  std::vector<int> inverse(n);
  for (int i = 0; i < n; ++i) inverse[order[i]] = i;
  return view.permute(inverse);
}

Result<Tensor> make_workspace(const Implementation& impl, const Problem& problem, DeviceRuntime& device) {
  if (!impl.workspace_bytes) return Tensor{};
  auto bytes = impl.workspace_bytes(problem, device);
  if (!bytes) return bytes.status();
  if (*bytes == 0) return Tensor{};
  return empty_tensor(device, DType::u8, {static_cast<int64_t>(*bytes)});
}

Result<std::vector<Tensor>> make_random_inputs(const OpSpec& spec, const Problem& problem, const Signature& sig) {
  std::vector<Tensor> inputs;
  for (const auto& in : sig.inputs) {
    auto t = empty_tensor(scratch_host(), in.dtype, in.shape);
    if (!t) return t.status();
    inputs.push_back(*t);
  }
  Rng rng(problem.seed());
  DNNB_TRY(spec.fill_inputs ? spec.fill_inputs(problem, inputs, rng) : fill_normal(problem, inputs, rng));
  return inputs;
}

namespace {

constexpr size_t kGuardBytes = 256;  // keeps the output 256-byte aligned for vector stores
constexpr uint8_t kGuardByte = 0xA5;
constexpr uint8_t kPoisonByte = 0xFF;  // all-ones is NaN in f32, f16 and bf16

struct GuardedOutput {
  Tensor view;
  size_t body_bytes = 0;
  size_t guard_bytes = kGuardBytes;  // on each side
};

// A scalar dtype's output starts kGuardBytes into its buffer. A block format's offset must be
// whole blocks (core/tensor.h), so its guard is 256 blocks: a multiple of 256 bytes for every
// block size, which keeps the output 256-byte aligned too.
Result<GuardedOutput> make_guarded_output(DeviceRuntime& device, const TensorSpec& spec) {
  GuardedOutput out;
  int64_t offset = 0;
  if (is_block_format(spec.dtype)) {
    offset = 256 * block_values(spec.dtype);
    out.guard_bytes = storage_bytes(spec.dtype, offset);
  } else {
    const size_t es = dtype_size(spec.dtype);
    if (kGuardBytes % es != 0) return DNNB_ERROR("guard size is not a multiple of the element size");
    offset = static_cast<int64_t>(kGuardBytes / es);
  }
  out.body_bytes = storage_bytes(spec.dtype, shape_numel(spec.shape));
  auto buffer = device.allocate(out.body_bytes + 2 * out.guard_bytes);
  if (!buffer) return buffer.status();
  out.view.dtype = spec.dtype;
  out.view.shape = spec.shape;
  out.view.strides = contiguous_strides(spec.shape);
  out.view.offset = offset;
  out.view.buffer = *buffer;
  return out;
}

Status poison(DeviceRuntime& device, GuardedOutput& out) {
  std::vector<uint8_t> bytes(out.body_bytes + 2 * out.guard_bytes, kGuardByte);
  std::memset(bytes.data() + out.guard_bytes, kPoisonByte, out.body_bytes);
  return device.upload(*out.view.buffer, 0, bytes.data(), bytes.size());
}

// Downloads the whole guarded buffer; fails if a guard byte changed.
Status read_guarded(DeviceRuntime& device, const GuardedOutput& out, std::vector<uint8_t>& body) {
  const size_t guard = out.guard_bytes;
  std::vector<uint8_t> bytes(out.body_bytes + 2 * guard);
  DNNB_TRY(device.download(bytes.data(), *out.view.buffer, 0, bytes.size()));
  size_t before = 0, after = 0;
  for (size_t i = 0; i < guard; ++i) {
    before += bytes[i] != kGuardByte;
    after += bytes[guard + out.body_bytes + i] != kGuardByte;
  }
  body.assign(bytes.begin() + guard, bytes.begin() + guard + out.body_bytes);
  if (before || after)
    return Status::mismatch("wrote outside the output: " + std::to_string(before) + " guard bytes changed before it, " +
                            std::to_string(after) + " after it");
  return Status::ok();
}

// Where a case's inputs come from, as results print it.
std::string source_text(const PlannedCase& pc) {
  if (pc.fixture) return "fixture " + pc.fixture->path;
  const std::string seed = "random seed=" + hex64(pc.id.problem.seed());
  if (!pc.weights) return seed;
  // The seed draws the op's other inputs, if it has any.
  return "weights " + pc.weights->file->path() + " tensor " + pc.weights->tensor->name + ", " + seed;
}

// The name of a tensor of step `step` in a fixture file: step 0 under the plain name, later
// steps as "<name>@<step>".
std::string step_name(const std::string& name, int step) {
  return step == 0 ? name : name + "@" + std::to_string(step);
}

// Where a case's inputs and expected outputs come from, step by step: a fixture file, or the
// reference on random inputs. Host tensors throughout; inputs contiguous in signature dtypes,
// expected outputs f64.
class CaseSource {
 public:
  CaseSource(const PlannedCase& pc, const FixtureManifest& manifest, const Signature& sig)
      : pc_(pc), manifest_(manifest), sig_(sig) {}

  // Step 0: every input. Later steps: the inputs that are not state (state entries are left
  // as they are). Then the expected outputs of the step (and torch's, for fixtures).
  Status next_step(int step, std::vector<Tensor>& inputs, std::vector<Tensor>& expected, std::vector<Tensor>& torch) {
    expected.clear();
    torch.clear();
    return pc_.fixture ? from_fixture(step, inputs, expected, torch) : from_random(step, inputs, expected, torch);
  }
  // The expected state after the last step, one per input (empty tensors for inputs that are
  // not state).
  Result<std::vector<Tensor>> final_state(const std::vector<Tensor>& advanced_state);
  const std::string& source() const { return source_; }

 private:
  Result<Tensor> load_checked(const std::string& name, DType dtype, const Shape& shape) {
    auto t = file_->load(name, scratch_host());
    if (!t) return Status::bad_input(path_ + ": " + t.status().message);
    if (is_block_format(dtype) && t->dtype == DType::u8 && !shape.empty()) {
      // safetensors has no block formats: a fixture stores one as its bytes, U8 of shape
      // [..., last / 32 x block bytes] (docs/ops-family4.md, "dequantize_blocks").
      Shape bytes_shape = shape;
      bytes_shape.back() = static_cast<int64_t>(storage_bytes(dtype, shape.back()));
      if (t->shape == bytes_shape) {
        auto blocks = empty_tensor(scratch_host(), dtype, shape);
        if (!blocks) return blocks.status();
        std::memcpy(blocks->host_data(), t->host_data(), storage_bytes(dtype, shape_numel(shape)));
        return blocks;
      }
    }
    if (t->dtype != dtype || t->shape != shape)
      return Status::bad_input(path_ + ": tensor '" + name + "' is " + dtype_name(t->dtype) + " " +
                               shape_to_string(t->shape) + ", the signature wants " + dtype_name(dtype) + " " +
                               shape_to_string(shape));
    return t;
  }
  Status from_fixture(int step, std::vector<Tensor>& inputs, std::vector<Tensor>& expected, std::vector<Tensor>& torch) {
    if (!file_) {
      DNNB_TRY(manifest_.verify(*pc_.fixture));
      path_ = manifest_.full_path(*pc_.fixture);
      auto file = SafetensorsFile::open(path_);
      if (!file) return file.status();
      file_ = *file;
      source_ = "fixture " + pc_.fixture->path;
      inputs.resize(sig_.inputs.size());
    }
    for (size_t i = 0; i < sig_.inputs.size(); ++i) {
      const TensorSpec& in = sig_.inputs[i];
      if (step > 0 && in.state) continue;
      // An input the file does not give at a later step keeps its previous step's value (a
      // block's weights, the same at every decode step).
      if (step > 0 && file_->find(step_name(in.name, step)) == nullptr) continue;
      auto t = load_checked(step_name(in.name, step), in.dtype, in.shape);
      if (!t) return t.status();
      inputs[i] = *t;
    }
    for (const auto& out : sig_.outputs) {
      auto golden = load_checked(step_name("golden." + out.name, step), DType::f64, out.shape);
      if (!golden) return golden.status();
      expected.push_back(*golden);
      Tensor torch_out;
      if (file_->find(step_name("torch." + out.name, step)) != nullptr) {
        auto t = load_checked(step_name("torch." + out.name, step), out.dtype, out.shape);
        if (!t) return t.status();
        torch_out = *t;
      }
      torch.push_back(torch_out);
    }
    return Status::ok();
  }
  Status from_random(int step, std::vector<Tensor>& inputs, std::vector<Tensor>& expected, std::vector<Tensor>& torch) {
    const Problem& p = pc_.id.problem;
    if (step == 0 && pc_.weights) {
      // The weight input is the file's tensor; the others random. An op whose only input is
      // the weight draws nothing (a model's tensor can be large).
      if (sig_.inputs.size() == 1) {
        inputs.clear();
        auto t = empty_tensor(scratch_host(), sig_.inputs[0].dtype, sig_.inputs[0].shape);
        if (!t) return t.status();
        inputs.push_back(*t);
      } else {
        auto made = make_random_inputs(*pc_.spec, p, sig_);
        if (!made) return made.status();
        inputs = std::move(*made);
      }
      DNNB_TRY(load_weight_input(*pc_.weights, inputs[pc_.weights->input]));
      source_ = source_text(pc_);
    } else if (step == 0) {
      auto made = make_random_inputs(*pc_.spec, p, sig_);
      if (!made) return made.status();
      inputs = std::move(*made);
      source_ = "random seed=" + hex64(p.seed());
    } else {
      if (!pc_.spec->step_inputs)
        return Status::error("op " + pc_.spec->name + " runs several steps without step_inputs");
      Rng rng(p.seed() ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(step)));
      DNNB_TRY(pc_.spec->step_inputs(p, step, inputs, rng));
    }
    for (const auto& out : sig_.outputs) {
      auto t = empty_tensor(scratch_host(), DType::f64, out.shape);
      if (!t) return t.status();
      expected.push_back(*t);
      torch.emplace_back();
    }
    return Status::ok();
  }

  const PlannedCase& pc_;
  const FixtureManifest& manifest_;
  const Signature& sig_;
  std::shared_ptr<SafetensorsFile> file_;
  std::string path_, source_;
};

Result<std::vector<Tensor>> CaseSource::final_state(const std::vector<Tensor>& advanced_state) {
  std::vector<Tensor> out(sig_.inputs.size());
  for (size_t i = 0; i < sig_.inputs.size(); ++i) {
    const TensorSpec& in = sig_.inputs[i];
    if (!in.state) continue;
    if (!pc_.fixture) {
      out[i] = advanced_state[i];
      continue;
    }
    auto golden = load_checked("golden." + in.name, in.dtype, in.shape);
    if (!golden) return golden.status();
    out[i] = *golden;
  }
  return out;
}

// The smoke tier's one fixture of an op and dtype: its `basic` case where it has one.
const FixtureEntry* smoke_fixture(const std::vector<const FixtureEntry*>& entries) {
  for (const FixtureEntry* e : entries)
    if (e->problem.find("fixture=basic") != std::string::npos) return e;
  return entries.front();
}

}  // namespace

PlanFilter check_plan_filter(const CheckOptions& options) {
  PlanFilter filter;
  filter.op_glob = options.op_glob;
  filter.backends = options.backend;
  filter.all_variants = options.all_variants || options.tier == CheckTier::full;
  filter.dtype = options.dtype;
  if (!options.device.empty()) filter.devices = {options.device};
  return filter;
}

Result<std::vector<PlannedCase>> plan_check(const CheckOptions& options, FixtureManifest& manifest,
                                            std::vector<SkippedTensor>* skipped_tensors) {
  manifest = FixtureManifest{};
  if (!options.weights_path.empty()) return plan_weight_check(options, skipped_tensors);
  if (!options.weights_tensors.empty()) return Status::bad_input("--tensor: names a tensor of the file --weights gives");
  const std::string fixtures_dir = options.fixtures_dir.empty() ? default_fixtures_dir() : options.fixtures_dir;
  if (options.fixtures) {
    auto m = FixtureManifest::load(fixtures_dir);
    if (!m) return m.status();
    manifest = std::move(*m);
  }
  std::vector<PlannedCase> plan;
  auto add = [&](const PlanCell& cell, Problem problem, const FixtureEntry* fixture) {
    PlannedCase pc;
    pc.id = case_id_of(cell, std::move(problem));
    pc.spec = cell.spec;
    pc.impl = cell.impl;
    pc.device = cell.device;
    pc.skip_reason = cell.absent_reason;
    pc.fixture = fixture;
    plan.push_back(std::move(pc));
  };

  if (!options.case_id.empty()) {
    auto id = CaseId::parse(options.case_id);
    if (!id) return id.status();
    if (id->problem.has(kWeightsTensorParam))
      return Status::bad_input("case '" + options.case_id + "': its weights are a tensor of a GGUF file: give the file with --weights FILE");
    auto cell = plan_case_cell(*id);
    if (!cell) return cell.status();
    const FixtureEntry* fixture = nullptr;
    if (id->problem.has("fixture")) {
      fixture = manifest.find_problem(id->problem.to_string());
      if (!fixture)
        return Status::bad_input("case '" + options.case_id + "': no fixture in " + fixtures_dir +
                                 "/manifest.json holds problem " + id->problem.to_string());
    }
    add(*cell, id->problem, fixture);
    return plan;
  }

  auto cells = plan_cells(check_plan_filter(options));
  if (!cells) return cells.status();
  for (const PlanCell& cell : *cells) {
    const OpSpec& spec = *cell.spec;
    if (options.fixtures) {
      std::vector<const FixtureEntry*> entries = manifest.cases_for(spec.name, cell.dtype);
      if (options.tier == CheckTier::smoke && !entries.empty()) entries = {smoke_fixture(entries)};
      for (const FixtureEntry* e : entries) add(cell, *Problem::parse(e->problem), e);
    }
    if (options.random && cell.impl->backend != "reference" && options.tier != CheckTier::smoke) {
      std::vector<ProblemText> texts = spec.check_problems;
      if (options.tier == CheckTier::full) texts.insert(texts.end(), spec.bench_problems.begin(), spec.bench_problems.end());
      auto problems = problems_at(spec, texts, cell.dtype);
      if (!problems) return problems.status();
      for (Problem& problem : *problems) {
        // The expected values come from the float64 reference on the host: a problem too
        // large for it is listed as skipped, with the reason.
        const bool too_large = spec.flops && spec.flops(problem) > kReferenceMaxFlops;
        add(cell, std::move(problem), nullptr);
        if (too_large) {
          plan.back().device = nullptr;
          plan.back().skip_reason = "not checked: the float64 reference is not run above " + reference_limit_text() +
                                    " FLOP (docs/ops-family2.md)";
        }
      }
    }
  }
  return plan;
}

CaseResult result_of(const PlannedCase& pc) {
  CaseResult r;
  r.case_id = pc.id.to_string();
  r.device = pc.device ? pc.device->info().id : "";
  r.source = source_text(pc);
  return r;
}

namespace {

// A contiguous f64 copy of a host tensor of any dtype.
Result<Tensor> as_f64(const Tensor& t) {
  auto contiguous = to_host(t);
  if (!contiguous) return contiguous.status();
  auto out = empty_tensor(scratch_host(), DType::f64, t.shape);
  if (!out) return out.status();
  auto* d = static_cast<double*>(out->host_data());
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = load_element(contiguous->host_data(), t.dtype, i);
  return out;
}

// Compares one output (or state) with its expected values, and torch's, into `o`; false when
// it fails, with the reason in `why`.
bool judge_output(const Tensor& ours, const Tensor& expected, const Tensor& torch, OutputResult& o, std::string& why) {
  o.ours = compare_outputs(ours, expected, o.tolerance);
  bool pass = metrics_pass(o.ours, &why);
  if (torch.buffer) {
    o.has_torch = true;
    o.torch = compare_outputs(torch, expected, o.tolerance);
    // PyTorch itself outside the policy (it rounds intermediates to the dtype): being no less
    // accurate than PyTorch passes. docs/conformance.md gives the reason.
    if (!pass && o.ours.nan_mismatch == 0 && o.ours.inf_mismatch == 0 && !metrics_pass(o.torch, nullptr) &&
        o.torch.nan_mismatch == 0 && o.ours.max_abs <= o.torch.max_abs && o.ours.rel_l2 <= o.torch.rel_l2) {
      pass = true;
      o.within_torch = true;
    }
  }
  return pass;
}

// FlashAttention's rule for outputs with an OutputBound::torch_factor: the max abs error against the
// float64 golden at most `factor` x torch's own same-dtype error plus `floor`; NaN/Inf
// mismatches and mistrusted outputs fail as always.
bool judge_against_torch(const Tensor& ours, const Tensor& expected, const Tensor& torch, double factor, double floor,
                         OutputResult& o, std::string& why) {
  o.ours = compare_outputs(ours, expected, o.tolerance);
  o.torch = compare_outputs(torch, expected, o.tolerance);
  o.has_torch = true;
  Metrics structural = o.ours;
  structural.violations = 0;  // the elementwise bound is the random cases' rule, not this one
  if (!metrics_pass(structural, &why)) return false;
  const double allowed = factor * o.torch.max_abs + floor;
  char rule[96];
  std::snprintf(rule, sizeof rule, "<= %g x torch's error + %.2g", factor, floor);
  o.torch_rule = rule;
  if (o.ours.max_abs <= allowed) {
    o.within_torch = true;
    return true;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "max abs error %.3g at %s is over %g x torch's %.3g + floor %.3g = %.3g (%.3gx the allowed error)",
                o.ours.max_abs, o.ours.worst_coord.c_str(), factor, o.torch.max_abs, floor, allowed,
                allowed > 0 ? o.ours.max_abs / allowed : 0.0);
  why = buf;
  return false;
}

}  // namespace

CaseResult run_case(const PlannedCase& pc, const FixtureManifest& manifest, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult r = result_of(pc);
  auto finish = [&](Status s) {
    r.status = s.code;
    r.reason = s.message;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  if (!pc.device) return finish(Status::skipped(pc.skip_reason));
  const Problem& problem = pc.id.problem;
  const OpSpec& op = *pc.spec;
  auto sig = op.signature(problem);
  if (!sig) return finish(Status::bad_input(r.case_id + ": " + sig.status().message));
  Status support = pc.impl->supports(problem, *pc.device);
  if (!support.is_ok()) return finish(support);
  const int steps = op.steps ? op.steps(problem) : 1;
  if (steps < 1) return finish(Status::bad_input(r.case_id + ": " + std::to_string(steps) + " steps"));
  const bool has_state =
      std::any_of(sig->inputs.begin(), sig->inputs.end(), [](const TensorSpec& t) { return t.state; });

  DeviceRuntime& device = *pc.device;
  auto workspace = make_workspace(*pc.impl, problem, device);
  if (!workspace) return finish(workspace.status());
  OpCall call{problem, device, {}, {}, *workspace};
  for (const auto& in : sig->inputs) {
    auto t = make_device_input(device, in);
    if (!t) return finish(t.status());
    call.inputs.push_back(*t);
  }
  std::vector<GuardedOutput> outputs;
  for (const auto& spec : sig->outputs) {
    auto g = make_guarded_output(device, spec);
    if (!g) return finish(g.status());
    outputs.push_back(*g);
    call.outputs.push_back(g->view);
  }
  const bool dot_product = op.tolerance == ToleranceClass::dot_product;
  if (dot_product && !op.dot_product_error)
    return finish(Status::error("op " + op.name + " is a dot_product op without dot_product_error"));

  CaseSource source(pc, manifest, *sig);
  std::vector<Tensor> inputs, expected, torch;
  // The reference's own copy of the state, advanced step by step (what the device received at
  // step 0 stays as it was).
  std::vector<Tensor> working(sig->inputs.size());
  // Each state input's tolerance after the last step: exact unless the op gives a bound
  // (OpSpec::state_bounds), the largest over the steps.
  std::vector<Tolerance> state_tolerance(sig->inputs.size());
  Status verdict = Status::ok();
  for (int step = 0; step < steps; ++step) {
    Status got = source.next_step(step, inputs, expected, torch);
    if (!got.is_ok()) return finish(got);
    r.source = source.source();
    std::vector<Tensor> reference_inputs = inputs;
    for (size_t i = 0; i < sig->inputs.size(); ++i) {
      if (!sig->inputs[i].state) continue;
      if (step == 0) {
        auto copy = to_host(inputs[i]);  // a copy: the uploaded step-0 state stays as it was
        if (!copy) return finish(copy.status());
        working[i] = *copy;
      }
      reference_inputs[i] = working[i];
    }
    std::vector<OutputBound> bounds;
    if (op.output_bounds) {
      auto b = op.output_bounds(problem, reference_inputs);
      if (!b) return finish(b.status());
      if (b->size() != sig->outputs.size())
        return finish(Status::error("op " + op.name + ": output_bounds gave " + std::to_string(b->size()) +
                                    " bounds for " + std::to_string(sig->outputs.size()) + " outputs"));
      bounds = std::move(*b);
    }
    if (has_state && op.state_bounds) {
      auto b = op.state_bounds(problem, reference_inputs);
      if (!b) return finish(b.status());
      if (b->size() != sig->inputs.size())
        return finish(Status::error("op " + op.name + ": state_bounds gave " + std::to_string(b->size()) +
                                    " bounds for " + std::to_string(sig->inputs.size()) + " inputs"));
      for (size_t i = 0; i < b->size(); ++i) {
        state_tolerance[i].rtol = std::max(state_tolerance[i].rtol, (*b)[i].rtol);
        state_tolerance[i].atol = std::max(state_tolerance[i].atol, (*b)[i].atol);
      }
    }
    std::vector<double> magnitudes;
    if (dot_product) {
      auto m = magnitude_rms(op, problem, *sig, reference_inputs);
      if (!m) return finish(m.status());
      magnitudes = std::move(*m);
    }
    if (!pc.fixture) {
      Status s = op.reference(problem, reference_inputs, expected);
      if (!s.is_ok()) return finish(s);
    } else if (has_state && steps > 1 && (dot_product || op.output_bounds)) {
      // Fixtures carry each step's expected outputs; the reference only advances the state the
      // next step's magnitude sums or bounds read.
      std::vector<Tensor> scratch;
      for (const auto& out : sig->outputs) {
        auto t = empty_tensor(scratch_host(), DType::f64, out.shape);
        if (!t) return finish(t.status());
        scratch.push_back(*t);
      }
      Status s = op.reference(problem, reference_inputs, scratch);
      if (!s.is_ok()) return finish(s);
    }
    for (size_t i = 0; i < sig->inputs.size(); ++i) {
      if (step > 0 && sig->inputs[i].state) continue;
      Status s = copy_tensor(call.inputs[i], inputs[i]);
      if (!s.is_ok()) return finish(s);
    }

    std::vector<std::vector<uint8_t>> first_bodies;
    const int runs = options.bitwise ? 2 : 1;
    for (int run = 0; run < runs; ++run) {
      for (auto& o : outputs) {
        Status s = poison(device, o);
        if (!s.is_ok()) return finish(s);
      }
      Status ran = pc.impl->run(call);
      if (!ran.is_ok()) return finish(ran);
      Status synced = device.synchronize();
      if (!synced.is_ok()) return finish(synced);
      std::vector<std::vector<uint8_t>> bodies(outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        Status s = read_guarded(device, outputs[i], bodies[i]);
        if (!s.is_ok()) return finish(s);
      }
      if (run == 0) {
        first_bodies = std::move(bodies);
      } else {
        for (size_t i = 0; i < outputs.size(); ++i) {
          size_t differ = 0;
          for (size_t b = 0; b < bodies[i].size(); ++b) differ += bodies[i][b] != first_bodies[i][b];
          if (differ)
            return finish(Status::mismatch("not bitwise reproducible: " + std::to_string(differ) + " bytes of output '" +
                                           step_name(sig->outputs[i].name, step) + "' differ between two runs"));
        }
      }
    }

    for (size_t i = 0; i < outputs.size(); ++i) {
      const TensorSpec& spec = sig->outputs[i];
      auto host = empty_tensor(scratch_host(), spec.dtype, spec.shape);
      if (!host) return finish(host.status());
      std::memcpy(host->host_data(), first_bodies[i].data(), first_bodies[i].size());
      OutputResult o;
      o.name = steps > 1 ? step_name(spec.name, step) : spec.name;
      if (!bounds.empty()) {
        o.tolerance = Tolerance{bounds[i].rtol, bounds[i].atol};
      } else {
        o.tolerance = dot_product ? dot_product_tolerance(spec.dtype, op.dot_product_error(problem, i), magnitudes[i])
                                  : tolerance_for(op.tolerance, spec.dtype, rms_of(expected[i]));
      }
      std::string why;
      const bool torch_rule = !bounds.empty() && bounds[i].torch_factor > 0 && torch[i].buffer;
      bool pass = torch_rule ? judge_against_torch(*host, expected[i], torch[i], bounds[i].torch_factor, bounds[i].floor, o, why)
                             : judge_output(*host, expected[i], torch[i], o, why);
      if (!pass && verdict.is_ok()) verdict = Status::mismatch("output '" + o.name + "': " + why);
      r.outputs.push_back(o);
      if (i == 0 && op.quantizes_input && *op.quantizes_input < inputs.size()) {
        auto decoded = as_f64(*host);
        if (!decoded) return finish(decoded.status());
        r.quantize_stats = quantize_stats(*decoded, inputs[*op.quantizes_input]);
      }
    }
    // A block names the node where its outputs first diverge (the workspace holds every node's).
    if (!verdict.is_ok() && op.explain_mismatch && verdict.message.find("first divergent node") == std::string::npos) {
      // The reference's inputs: a state there is the one this step ran on (already holding this
      // step's store, which running the step again leaves as it is).
      const std::string line = op.explain_mismatch(*pc.impl, call, reference_inputs);
      if (!line.empty()) verdict.message += "; " + line;
    }
  }

  if (has_state) {
    auto final_state = source.final_state(working);
    if (!final_state) return finish(final_state.status());
    for (size_t i = 0; i < sig->inputs.size(); ++i) {
      const TensorSpec& spec = sig->inputs[i];
      if (!spec.state) continue;
      auto ours = to_host(call.inputs[i]);
      if (!ours) return finish(ours.status());
      auto want = as_f64((*final_state)[i]);
      if (!want) return finish(want.status());
      OutputResult o;
      o.name = spec.name + " (state after step " + std::to_string(steps - 1) + ")";
      // The state holds the op's inputs rounded once into the state's dtype, a rounding with one
      // right answer: it must match value for value (NaN where the expected holds NaN), unless the
      // op bounds it (a block's cache holds a node's output, within its allowance).
      o.tolerance = state_tolerance[i];
      std::string why;
      if (!judge_output(*ours, *want, Tensor{}, o, why) && verdict.is_ok())
        verdict = Status::mismatch("state '" + spec.name + "': " + why);
      r.outputs.push_back(o);
    }
  }
  if (!verdict.is_ok()) {
    const std::string text = problem.to_string();
    for (const auto& d : pc.impl->known_deviations)
      if (glob_match(d.problem_glob, text)) {
        r.known_deviation = d.reason;
        verdict.message += " [known deviation: " + d.reason + "]";
        break;
      }
  }
  return finish(verdict);
}

CheckSummary summarize(const std::vector<CaseResult>& results) {
  CheckSummary s;
  for (const auto& r : results) {
    switch (r.status) {
      case StatusCode::ok: ++s.passed; break;
      case StatusCode::mismatch:
        if (r.expected_failure()) ++s.expected_failures;
        else ++s.failed;
        break;
      case StatusCode::error: ++s.failed; break;
      case StatusCode::skipped: ++s.skipped; break;
      case StatusCode::unsupported: ++s.unsupported; break;
      case StatusCode::bad_input: ++s.bad_input; break;
    }
  }
  return s;
}

namespace {
nlohmann::json metrics_json(const Metrics& m) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"count", m.count},          {"max_abs", num(m.max_abs)},       {"max_rel", num(m.max_rel)},
          {"rel_l2", num(m.rel_l2)},   {"nan_mismatch", m.nan_mismatch},  {"inf_mismatch", m.inf_mismatch},
          {"max_ulp", m.max_ulp},      {"violations", m.violations},      {"worst_coord", m.worst_coord},
          {"worst_got", num(m.worst_got)}, {"worst_expected", num(m.worst_expected)},
          {"zero_fraction", m.zero_fraction}};
}

}  // namespace

nlohmann::json results_to_json(const std::vector<CaseResult>& results) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json outs = nlohmann::json::array();
    for (const auto& o : r.outputs) {
      nlohmann::json j = {{"name", o.name},
                          {"tolerance", {{"rtol", o.tolerance.rtol}, {"atol", o.tolerance.atol}}},
                          {"metrics", metrics_json(o.ours)},
                          {"within_torch_error", o.within_torch}};
      if (o.has_torch) j["torch_metrics"] = metrics_json(o.torch);
      if (!o.torch_rule.empty()) j["torch_rule"] = o.torch_rule;
      outs.push_back(j);
    }
    cases.push_back({{"case", r.case_id}, {"device", r.device},   {"source", r.source}, {"known_deviation", r.known_deviation},
                     {"verdict", r.verdict()}, {"reason", r.reason}, {"seconds", r.seconds},
                     {"outputs", outs}});
    if (r.quantize_stats) {
      const QuantizeStats& q = *r.quantize_stats;
      cases.back()["quantize_stats"] = {{"count", q.count},   {"nonfinite", q.nonfinite}, {"rmse", q.rmse},
                                        {"max_abs", q.max_abs}, {"median", q.median},       {"p95", q.p95},
                                        {"histogram", q.histogram}};
    }
  }
  CheckSummary s = summarize(results);
  return {{"schema_version", 1},
          {"kind", "check"},
          {"summary", {{"passed", s.passed}, {"failed", s.failed}, {"expected_failures", s.expected_failures}, {"skipped", s.skipped},
                       {"unsupported", s.unsupported}, {"bad_input", s.bad_input}}},
          {"cases", cases}};
}

std::string results_to_junit(const std::vector<CaseResult>& results) {
  CheckSummary s = summarize(results);
  double total = 0;
  for (const auto& r : results) total += r.seconds;
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites><testsuite name=\"dnnblocks.check\" tests=\"" << results.size() << "\" failures=\""
    << s.failed << "\" errors=\"" << s.bad_input << "\" skipped=\"" << (s.skipped + s.unsupported + s.expected_failures) << "\" time=\""
    << total << "\">\n";
  for (const auto& r : results) {
    const std::string op = r.case_id.substr(0, r.case_id.find(':'));
    const std::string where = r.case_id.substr(r.case_id.rfind('@') + 1);
    x << "  <testcase classname=\"" << xml_escape(op + "." + where) << "\" name=\"" << xml_escape(r.case_id)
      << "\" time=\"" << r.seconds << "\">";
    if (r.failed()) x << "<failure message=\"" << xml_escape(r.reason) << "\"/>";
    else if (r.expected_failure()) x << "<skipped message=\"XFAIL: " << xml_escape(r.reason) << "\"/>";
    else if (r.status == StatusCode::bad_input) x << "<error message=\"" << xml_escape(r.reason) << "\"/>";
    else if (r.status != StatusCode::ok) x << "<skipped message=\"" << xml_escape(r.reason) << "\"/>";
    x << "</testcase>\n";
  }
  x << "</testsuite></testsuites>\n";
  return x.str();
}

std::string repro_command(const CaseResult& r, const CheckOptions& options) {
  std::string cmd = "dnnblocks check --case '" + r.case_id + "'";
  if (!options.fixtures_dir.empty()) cmd += " --fixtures '" + options.fixtures_dir + "'";
  if (!options.weights_path.empty()) {
    auto id = CaseId::parse(r.case_id);
    cmd += " --weights '" + options.weights_path + "'";
    if (id && id->problem.has(kWeightsTensorParam)) cmd += " --tensor '" + id->problem.get(kWeightsTensorParam) + "'";
  }
  if (options.bitwise) cmd += " --bitwise";
  return cmd;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace dnnb
