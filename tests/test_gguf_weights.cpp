// check --weights (core/gguf_weights.h, core/check_weights.cpp): the cases a GGUF file's tensors
// give the quantised ops, the tensors each op skips with the reason, the cases passing on every
// implementation here, and proof that the checked weight is the file's tensor: an
// implementation that writes gguf.quants' decoding of the file (tests/corpus/gguf/expected.json,
// written by suites/fixtures/gen/gguf_files.py) passes, and after one quant byte of the tensor
// is changed in a copy of the file it fails at exactly that element, while the kernels still
// agree with the reference on the changed file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/gguf_weights.h"

namespace dnnb {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(DNNB_SOURCE_DIR) / "tests" / "corpus" / "gguf";
const std::string kTypes = (kCorpus / "valid_types.gguf").string();
const std::vector<std::string> kOps = {"matmul_ggml", "dequantize_blocks", "quantize_blocks"};

CheckOptions weights_options(const std::string& path, const std::string& backend = "", const std::string& tensors = "") {
  CheckOptions options;
  options.weights_path = path;
  options.weights_tensors = tensors;
  options.op_glob = "matmul_ggml,dequantize_blocks,quantize_blocks";
  options.backend = backend;
  return options;
}

Result<std::vector<PlannedCase>> plan(const CheckOptions& options, std::vector<SkippedTensor>* skipped = nullptr) {
  FixtureManifest manifest;
  return plan_check(options, manifest, skipped);
}

// gguf.quants' decoding of a tensor of valid_types.gguf (expected.json).
std::vector<double> reference_values(const std::string& tensor) {
  std::ifstream in(kCorpus / "expected.json");
  const nlohmann::json all = nlohmann::json::parse(in);
  for (const auto& t : all["valid_types.gguf"]["tensors"])
    if (t["name"] == tensor) {
      std::vector<double> out;
      for (const auto& v : t["values"]) out.push_back(v.get<double>());
      return out;
    }
  ADD_FAILURE() << "expected.json has no tensor " << tensor;
  return {};
}

TEST(GgufWeights, PlansEveryTensorAnOpTakesAndListsTheRestWithTheReason) {
  std::vector<SkippedTensor> skipped;
  auto cases = plan(weights_options(kTypes, "avx512"), &skipped);
  ASSERT_TRUE(cases.is_ok()) << cases.status().message;
  std::set<std::string> problems;
  for (const PlannedCase& pc : *cases) {
    problems.insert(pc.id.problem.to_string());
    ASSERT_TRUE(pc.weights.has_value());
    EXPECT_EQ(pc.weights->tensor->name, pc.id.problem.get("tensor"));
    EXPECT_EQ(pc.id.backend, "avx512");
  }
  const std::set<std::string> want = {
      "matmul_ggml:q8_0:1x3x64:tensor=q8_0.w",        "matmul_ggml:q8_0:8x3x64:tensor=q8_0.w",
      "matmul_ggml:q4_0:1x2x96:tensor=q4_0.w",        "matmul_ggml:q4_0:8x2x96:tensor=q4_0.w",
      "matmul_ggml:q8_0:1x1x32:tensor=q8_0.row",      "matmul_ggml:q8_0:8x1x32:tensor=q8_0.row",
      "dequantize_blocks:q8_0:3x64:tensor=q8_0.w",    "dequantize_blocks:q4_0:2x96:tensor=q4_0.w",
      "dequantize_blocks:q8_0:1x32:tensor=q8_0.row",  "dequantize_blocks:q4_0:2x3x32:tensor=q4_0.3d"};
  EXPECT_EQ(problems, want);

  // Every tensor of the file is, for each op, either a case or listed with its reason.
  auto file = GgufFile::open(kTypes);
  ASSERT_TRUE(file.is_ok());
  std::map<std::string, std::string> reason;  // "op tensor" -> reason
  for (const SkippedTensor& s : skipped) reason[s.op + " " + s.tensor] = s.what + ": " + s.reason;
  for (const std::string& op : kOps)
    for (const auto& t : (*file)->tensors()) {
      bool planned = false;
      for (const PlannedCase& pc : *cases) planned |= pc.id.problem.op == op && pc.weights->tensor->name == t.name;
      EXPECT_NE(planned, reason.count(op + " " + t.name) == 1) << op << " " << t.name;
    }
  EXPECT_EQ(reason["matmul_ggml q4_K.w"], "q4_K 2x256: matmul_ggml takes q8_0 or q4_0 weights");
  EXPECT_EQ(reason["matmul_ggml q4_0.3d"], "q4_0 2x3x32: 3-D: matmul_ggml takes a 2-D weight [N, K]");
  EXPECT_EQ(reason["dequantize_blocks f16.odd"], "f16 2x7: dequantize_blocks takes q8_0 or q4_0 tensors");
  EXPECT_EQ(reason["quantize_blocks f32.odd"], "f32 3x5: rows of 5 values are not whole 32-value blocks");
  EXPECT_EQ(reason["quantize_blocks q6_K.w"], "q6_K 1x256: quantize_blocks takes f32, f16 or bf16 tensors");

  // The repro line reruns the case from the same file and tensor.
  const PlannedCase& first = cases->front();
  const std::string repro = repro_command(result_of(first), weights_options(kTypes));
  EXPECT_NE(repro.find("--case '" + first.id.to_string() + "'"), std::string::npos) << repro;
  EXPECT_NE(repro.find("--weights '" + kTypes + "' --tensor '" + first.weights->tensor->name + "'"), std::string::npos) << repro;
  CheckOptions rerun = weights_options(kTypes, "", first.weights->tensor->name);
  rerun.case_id = first.id.to_string();
  auto again = plan(rerun);
  ASSERT_TRUE(again.is_ok()) << again.status().message;
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].id.to_string(), first.id.to_string());
  EXPECT_EQ((*again)[0].weights->tensor, (*again)[0].weights->file->find_tensor(first.weights->tensor->name));
}

TEST(GgufWeights, TensorFlagSelectsTensors) {
  std::vector<SkippedTensor> skipped;
  auto cases = plan(weights_options(kTypes, "avx512", "q4_0.w,f32.odd"), &skipped);
  ASSERT_TRUE(cases.is_ok()) << cases.status().message;
  ASSERT_EQ(cases->size(), 3u);  // matmul_ggml at M = 1 and 8, dequantize_blocks
  for (const PlannedCase& pc : *cases) EXPECT_EQ(pc.id.problem.get("tensor"), "q4_0.w");
  // f32.odd for each op, q4_0.w for quantize_blocks.
  EXPECT_EQ(skipped.size(), 4u);
}

// Every planned case on every implementation of the machine (the quantize cases from
// valid_metadata.gguf's f32 [1, 32] tensor too) passes against the reference.
TEST(GgufWeights, CasesPassOnEveryImplementationHere) {
  for (const std::string& path : {kTypes, (kCorpus / "valid_metadata.gguf").string()}) {
    CheckOptions options = weights_options(path);
    options.all_variants = true;
    auto cases = plan(options);
    ASSERT_TRUE(cases.is_ok()) << cases.status().message;
    ASSERT_FALSE(cases->empty()) << path;
    FixtureManifest manifest;
    int passed = 0;
    for (const PlannedCase& pc : *cases) {
      const CaseResult r = run_case(pc, manifest, options);
      EXPECT_FALSE(r.failed() || r.status == StatusCode::bad_input) << r.case_id << ": " << r.reason;
      if (r.status != StatusCode::ok) continue;
      ++passed;
      EXPECT_NE(r.source.find("weights " + path + " tensor " + pc.weights->tensor->name), std::string::npos) << r.source;
    }
    EXPECT_GT(passed, 0) << path << ": no implementation here ran a case";
  }
}

// The dequantize case of q8_0.w run by an implementation that writes `values` (row-major) as y.
CaseResult run_writing(const std::string& path, const std::vector<double>& values, std::string* worst = nullptr) {
  CheckOptions options = weights_options(path);
  options.case_id = "dequantize_blocks:q8_0:3x64:tensor=q8_0.w@reference";
  auto cases = plan(options);
  EXPECT_TRUE(cases.is_ok()) << cases.status().message;
  if (!cases || cases->size() != 1 || (*cases)[0].device == nullptr) {
    ADD_FAILURE() << "no host case for " << options.case_id;
    return CaseResult{};
  }
  Implementation writes = *(*cases)[0].impl;
  writes.variant = "writes_gguf_quants";
  writes.run = [values](OpCall& call) {
    Tensor& y = call.outputs.at(0);
    for (size_t i = 0; i < values.size(); ++i) store_element(y.host_data(), y.dtype, static_cast<int64_t>(i), values[i]);
    return Status::ok();
  };
  PlannedCase pc = (*cases)[0];
  pc.impl = &writes;
  FixtureManifest manifest;
  CaseResult r = run_case(pc, manifest, options);
  if (worst != nullptr && !r.outputs.empty()) *worst = r.outputs[0].ours.worst_coord;
  return r;
}

TEST(GgufWeights, TheCheckedWeightIsTheFilesTensor) {
  const std::vector<double> gguf_quants = reference_values("q8_0.w");
  ASSERT_EQ(gguf_quants.size(), 3u * 64u);
  // gguf.quants' decoding of the file's tensor is what the check expects.
  const CaseResult same = run_writing(kTypes, gguf_quants);
  EXPECT_EQ(same.status, StatusCode::ok) << same.reason;

  // A copy of the file with quant 5 of row 1 (block 0) one step higher.
  auto file = GgufFile::open(kTypes);
  ASSERT_TRUE(file.is_ok());
  const GgufTensorInfo* t = (*file)->find_tensor("q8_0.w");
  ASSERT_NE(t, nullptr);
  std::ifstream in(kTypes, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const size_t row_bytes = 2 * 34, at = (*file)->data_offset() + t->offset + row_bytes + 2 + 5;
  const int8_t q = static_cast<int8_t>(bytes[at]);
  bytes[at] = static_cast<char>(q == 127 ? q - 1 : q + 1);
  const fs::path changed = fs::path(testing::TempDir()) / "gguf_weights_changed.gguf";
  std::ofstream(changed, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  std::string worst;
  const CaseResult differs = run_writing(changed.string(), gguf_quants, &worst);
  EXPECT_EQ(differs.status, StatusCode::mismatch) << differs.reason;
  EXPECT_EQ(worst, "[1, 5]");

  // The kernels read the changed bytes as the reference does.
  CheckOptions options = weights_options(changed.string(), "", "q8_0.w");
  auto cases = plan(options);
  ASSERT_TRUE(cases.is_ok()) << cases.status().message;
  FixtureManifest manifest;
  for (const PlannedCase& pc : *cases) {
    const CaseResult r = run_case(pc, manifest, options);
    EXPECT_FALSE(r.failed()) << r.case_id << ": " << r.reason;
  }
}

TEST(GgufWeights, BadInputNamesTheFileTheTensorOrTheFlag) {
  auto expect_bad = [](const CheckOptions& options, const std::vector<std::string>& parts) {
    auto p = plan(options);
    ASSERT_FALSE(p.is_ok());
    EXPECT_EQ(p.status().code, StatusCode::bad_input);
    for (const std::string& part : parts) EXPECT_NE(p.status().message.find(part), std::string::npos) << p.status().message;
  };
  const std::string bad = (kCorpus / "bad_magic.gguf").string();
  expect_bad(weights_options(bad), {bad, "rule: magic"});
  const std::string missing = (kCorpus / "no_such_file.gguf").string();
  expect_bad(weights_options(missing), {missing, "cannot open"});
  expect_bad(weights_options(kTypes, "", "q8_0.w,nope"), {kTypes, "\"nope\"", "--tensor"});
  CheckOptions no_file;
  no_file.weights_tensors = "q8_0.w";
  expect_bad(no_file, {"--tensor"});
  CheckOptions softmax = weights_options(kTypes);
  softmax.op_glob = "softmax";
  expect_bad(softmax, {"--op softmax"});
  CheckOptions case_without_file;
  case_without_file.case_id = "dequantize_blocks:q8_0:3x64:tensor=q8_0.w@avx512";
  expect_bad(case_without_file, {"--weights"});
  CheckOptions wrong_type = weights_options(kTypes);
  wrong_type.case_id = "dequantize_blocks:q8_0:2x256:tensor=q4_K.w@avx512";
  expect_bad(wrong_type, {"q4_K", "\"q4_K.w\""});
  CheckOptions wrong_shape = weights_options(kTypes);
  wrong_shape.case_id = "matmul_ggml:q8_0:1x3x32:tensor=q8_0.w@avx512";
  expect_bad(wrong_shape, {"3x64", "\"q8_0.w\""});
}

}  // namespace
}  // namespace dnnb
