// Typed descriptors of family 2's layout ops (permute, concat, slice, embedding, repeat_kv):
// each problem's params are parsed here once, with their defaults, for the op specs, the
// references and every backend's kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"

namespace dnnb::ops {

// permute: shape of x (1 to 4 dims); perm=<digits>, a permutation of 0..rank-1 ("0213").
Result<std::vector<int>> permute_order(const Problem& problem);

// concat: a has the problem's shape; b=<shape> (default a's) differs from it only in `dim`
// (dim=<d>, default the last); y joins them along dim.
struct ConcatDesc {
  int dim = 0;
  Shape a, b, y;
};
Result<ConcatDesc> concat_desc(const Problem& problem);

// slice: x has the problem's shape; dim=<d> (default the last), start=<s> (default 0),
// len=<l> (required); y = x.narrow(dim, start, len).
struct SliceDesc {
  int dim = 0;
  int64_t start = 0, length = 0;
  Shape y;
};
Result<SliceDesc> slice_desc(const Problem& problem);

// embedding: shape "TxVxD": T ids into a table of V rows of D values.
struct EmbeddingDesc {
  int64_t tokens = 0, vocab = 0, dim = 0;
};
Result<EmbeddingDesc> embedding_desc(const Problem& problem);
// embedding_bwd's operands, checked by every backend the same way: shape "TxVxD", inputs ids [T]
// (i64 or i32: other dtypes unsupported) and dy [T, D], output dW [V, D] in dy's dtype (bad_input
// naming the operands otherwise). `who` prefixes the messages ("cuda embedding_bwd").
Result<EmbeddingDesc> embedding_bwd_operands(const OpCall& call, const std::string& who);

// repeat_kv: shape "BxHxSxD"; n_rep=<R> (required, >= 1); y is [B, H * R, S, D].
struct RepeatKvDesc {
  int64_t n_rep = 1;
  Shape y;
};
Result<RepeatKvDesc> repeat_kv_desc(const Problem& problem);

}  // namespace dnnb::ops
