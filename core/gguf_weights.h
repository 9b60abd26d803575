// Weights from a GGUF file for `dnnblocks check --weights FILE.gguf [--tensor NAME[,NAME]]`
// (docs/ops-family4.md, "Checking a model's weights"): the quantised ops take one operand from
// a tensor of the file, byte for byte, and their other inputs random (seeded by the problem),
// and each case is checked against the float64 reference as a random case is. The ops and the
// tensors each takes:
//   matmul_ggml        w [N, K]: a 2-D q8_0 or q4_0 tensor; x random at M = 1 (decode) and 8
//   dequantize_blocks  x: a q8_0 or q4_0 tensor of any rank
//   quantize_blocks    x: an f32, f16 or bf16 tensor whose rows are whole 32-value blocks,
//                      to q8_0 and to q4_0 (check prints llama.cpp quantize-stats' figures)
// A case's problem names its tensor, `tensor=NAME` ("matmul_ggml:q8_0:1x4096x14336:
// tensor=blk.0.ffn_down.weight"): its id is unique in the file, its seed differs per tensor,
// and `--case ID --weights FILE` reruns it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/gguf.h"
#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

// The problem parameter that names a case's tensor.
inline constexpr const char* kWeightsTensorParam = "tensor";
// Largest tensor (elements) a case takes: the check holds the float64 expected values of every
// element (8 bytes each) beside the output, so 2^27 elements is 1 GiB of expected values; a
// larger tensor is listed as skipped with this reason.
inline constexpr int64_t kWeightsMaxElements = int64_t{1} << 27;

// A case's weight operand: the tensor of the file, and the index of the op's input it fills.
struct WeightSource {
  std::shared_ptr<const GgufFile> file;
  const GgufTensorInfo* tensor = nullptr;
  size_t input = 0;
};

// A tensor an op takes no case from, and why ("q4_K: matmul_ggml takes q8_0 or q4_0").
struct SkippedTensor {
  std::string op;
  std::string tensor;
  std::string what;    // "q4_K [4096, 4096]": the ggml type and the row-major shape
  std::string reason;
};

// The ops that take weights from a file, in the order above.
const std::vector<std::string>& weight_ops();
bool takes_weights(const std::string& op);

// Opens and validates FILE (bad_input with the GGUF rule, naming the file); `names` (from
// --tensor, comma-separated; empty: every tensor) must each be a tensor of it (bad_input
// naming the file and the name otherwise).
Result<std::shared_ptr<const GgufFile>> open_weights(const std::string& path);
Result<std::vector<const GgufTensorInfo*>> select_tensors(const GgufFile& file, const std::string& names);

// The problems op `op` takes from `tensor` (empty with `skip` set when it takes none).
std::vector<Problem> weight_problems(const std::string& op, const GgufTensorInfo& tensor, SkippedTensor& skip);

// The weight source of a problem with `tensor=NAME` on the file: bad_input when the problem's
// op takes no weights, the file has no such tensor, or the tensor is not the one the problem
// was made from (its type and shape must give the problem's dtype and shape).
Result<WeightSource> weight_source(const std::shared_ptr<const GgufFile>& file, const Problem& problem);

// The tensor's bytes into `input` (a contiguous host tensor of the signature's dtype and shape).
Status load_weight_input(const WeightSource& source, Tensor& input);

}  // namespace dnnb
