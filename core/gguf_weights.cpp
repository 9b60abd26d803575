#include "core/gguf_weights.h"

#include <algorithm>
#include <cstring>

#include "core/registry.h"
#include "core/safetensors_header.h"  // quoted_for_message

namespace dnnb {

namespace {

// Which input of each op a tensor fills.
struct WeightOp {
  const char* op;
  const char* input;
};
constexpr WeightOp kWeightOps[] = {{"matmul_ggml", "w"}, {"dequantize_blocks", "x"}, {"quantize_blocks", "x"}};

// matmul_ggml's rows of x: decode (one token) and a small batch.
constexpr int64_t kDecodeRows[] = {1, 8};
// quantize_blocks' targets: llama.cpp's formats.
constexpr DType kQuantizeTargets[] = {DType::q8_0, DType::q4_0};

std::string quoted(const std::string& text) { return quoted_for_message(text); }

Shape row_major_shape(const GgufTensorInfo& t) { return Shape(t.dims.rbegin(), t.dims.rend()); }

std::string type_name(const GgufTensorInfo& t) {
  const GgmlTypeInfo* info = ggml_type_info(t.type);
  return info ? info->name : "type " + std::to_string(t.type);
}

const WeightOp* find_weight_op(const std::string& op) {
  for (const WeightOp& w : kWeightOps)
    if (op == w.op) return &w;
  return nullptr;
}

bool one_of(DType d, std::initializer_list<DType> list) { return std::find(list.begin(), list.end(), d) != list.end(); }

}  // namespace

const std::vector<std::string>& weight_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> out;
    for (const WeightOp& w : kWeightOps) out.push_back(w.op);
    return out;
  }();
  return ops;
}

bool takes_weights(const std::string& op) { return find_weight_op(op) != nullptr; }

Result<std::shared_ptr<const GgufFile>> open_weights(const std::string& path) {
  auto file = GgufFile::open(path);
  if (!file) return Status::bad_input("--weights: " + file.status().message);
  return std::shared_ptr<const GgufFile>(*file);
}

Result<std::vector<const GgufTensorInfo*>> select_tensors(const GgufFile& file, const std::string& names) {
  std::vector<const GgufTensorInfo*> out;
  if (names.empty()) {
    for (const auto& t : file.tensors()) out.push_back(&t);
    return out;
  }
  size_t start = 0;
  while (start <= names.size()) {
    size_t end = names.find(',', start);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(start, end - start);
    const GgufTensorInfo* t = file.find_tensor(name);
    if (t == nullptr)
      return Status::bad_input("--tensor: " + file.path() + " has no tensor named " + quoted(name) +
                               " (dnnblocks inspect lists them)");
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    start = end + 1;
  }
  return out;
}

std::vector<Problem> weight_problems(const std::string& op, const GgufTensorInfo& t, SkippedTensor& skip) {
  const Shape shape = row_major_shape(t);
  skip = SkippedTensor{op, t.name, type_name(t) + " " + shape_to_string(shape), ""};
  const std::optional<DType> dtype = ggml_compute_dtype(t.type);
  std::vector<Problem> out;
  auto problem = [&](DType dt, Shape s) {
    Problem p;
    p.op = op;
    p.dtype = dt;
    p.shape = std::move(s);
    p.params[kWeightsTensorParam] = t.name;
    return p;
  };
  const bool quantised = dtype && one_of(*dtype, {DType::q8_0, DType::q4_0});
  if (op == "matmul_ggml" && !quantised) {
    skip.reason = "matmul_ggml takes q8_0 or q4_0 weights";
  } else if (op == "dequantize_blocks" && !quantised) {
    skip.reason = "dequantize_blocks takes q8_0 or q4_0 tensors";
  } else if (op == "quantize_blocks" && !(dtype && one_of(*dtype, {DType::f32, DType::f16, DType::bf16}))) {
    skip.reason = "quantize_blocks takes f32, f16 or bf16 tensors";
  } else if (t.dims.empty() || t.numel == 0) {
    skip.reason = t.dims.empty() ? "a scalar, not a weight" : "no elements";
  } else if (op == "matmul_ggml" && t.dims.size() != 2) {
    skip.reason = std::to_string(t.dims.size()) + "-D: matmul_ggml takes a 2-D weight [N, K]";
  } else if (op == "quantize_blocks" && t.dims[0] % 32 != 0) {
    skip.reason = "rows of " + std::to_string(t.dims[0]) + " values are not whole 32-value blocks";
  } else if (t.name.find_first_of(",:@") != std::string::npos || t.name.empty()) {
    skip.reason = "its name holds ',', ':' or '@', which a case id cannot carry";
  } else if (static_cast<int64_t>(t.numel) > kWeightsMaxElements) {
    skip.reason = "not checked: over 2^27 elements (the float64 expected values of a case are 8 bytes an element)";
  }
  if (!skip.reason.empty()) return out;
  if (op == "matmul_ggml") {
    for (int64_t m : kDecodeRows) out.push_back(problem(*dtype, {m, shape[0], shape[1]}));
  } else if (op == "dequantize_blocks") {
    out.push_back(problem(*dtype, shape));
  } else {
    for (DType to : kQuantizeTargets) {
      out.push_back(problem(*dtype, shape));
      out.back().params["y.dt"] = dtype_name(to);
    }
  }
  return out;
}

Result<WeightSource> weight_source(const std::shared_ptr<const GgufFile>& file, const Problem& problem) {
  const std::string text = problem.to_string();
  const WeightOp* wop = find_weight_op(problem.op);
  if (wop == nullptr)
    return Status::bad_input("--weights: " + problem.op + " takes no weights from a GGUF file (matmul_ggml, "
                             "dequantize_blocks and quantize_blocks do)");
  if (!problem.has(kWeightsTensorParam))
    return Status::bad_input("--weights: problem " + text + " names no tensor (tensor=NAME)");
  const GgufTensorInfo* t = file->find_tensor(problem.get(kWeightsTensorParam));
  if (t == nullptr)
    return Status::bad_input("problem " + text + ": " + file->path() + " has no tensor named " +
                             quoted(problem.get(kWeightsTensorParam)));
  const OpSpec* spec = Registry::instance().find_op(problem.op);
  if (spec == nullptr) return Status::bad_input("problem " + text + ": unknown op");
  auto sig = spec->signature(problem);
  if (!sig) return Status::bad_input("problem " + text + ": " + sig.status().message);
  WeightSource source{file, t, 0};
  while (source.input < sig->inputs.size() && sig->inputs[source.input].name != wop->input) ++source.input;
  if (source.input == sig->inputs.size())
    return Status::error(problem.op + " has no input '" + std::string(wop->input) + "' to take a weight");
  const TensorSpec& in = sig->inputs[source.input];
  const std::optional<DType> dtype = ggml_compute_dtype(t->type);
  if (!dtype || *dtype != in.dtype || row_major_shape(*t) != in.shape || !in.storage_order.empty() || in.row_padding != 0)
    return Status::bad_input("problem " + text + ": its " + in.name + " is " + dtype_name(in.dtype) + " " +
                             shape_to_string(in.shape) + " contiguous, but tensor " + quoted(t->name) + " of " +
                             file->path() + " is " + type_name(*t) + " " + shape_to_string(row_major_shape(*t)));
  return source;
}

Status load_weight_input(const WeightSource& source, Tensor& input) {
  const GgufTensorInfo& t = *source.tensor;
  const size_t bytes = storage_bytes(input.dtype, input.numel());
  if (input.host_data() == nullptr || !input.is_contiguous() || bytes != t.bytes)
    return Status::error("tensor " + quoted(t.name) + ": its " + std::to_string(t.bytes) +
                         " bytes do not fill a contiguous host input of " + std::to_string(bytes));
  if (bytes > 0) std::memcpy(input.host_data(), t.data, bytes);
  return Status::ok();
}

}  // namespace dnnb
