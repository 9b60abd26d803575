// embedding: y[t] = table[ids[t]] (F.embedding). Every id is checked against [0, V) before
// any row is touched: one out of range makes the run bad_input, naming it, and nothing is
// read through it (torch raises IndexError). Then rows are gathered over threads, tasks of
// whole rows, each row a memcpy (or element by element for a table whose rows are not
// unit-stride). Bit-exact.
#include <cstring>

#include "kernels/avx512/avx512_common.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::avx512 {
namespace {

Status embedding_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::embedding_desc(p);
  return d ? Status::ok() : d.status();
}

Result<std::vector<int64_t>> read_ids(const Tensor& ids, int64_t vocab) {
  const void* base = ids.host_data();
  if (base == nullptr) return Status::bad_input("avx512 embedding: ids are not in host memory");
  if (ids.dtype != DType::i64 && ids.dtype != DType::i32)
    return Status::unsupported(std::string("avx512 embedding: ids of dtype ") + dtype_name(ids.dtype));
  const int64_t n = ids.numel(), stride = ids.ndim() ? ids.strides[0] : 1;
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const int64_t id = ids.dtype == DType::i64 ? static_cast<const int64_t*>(base)[t * stride]
                                                : static_cast<const int32_t*>(base)[t * stride];
    if (id < 0 || id >= vocab)
      return Status::bad_input("embedding: ids[" + std::to_string(t) + "] = " + std::to_string(id) +
                               " is outside the table's " + std::to_string(vocab) + " rows");
    out[t] = id;
  }
  return out;
}

Status run_embedding(OpCall& call) {
  auto d = ops::embedding_desc(call.problem);
  if (!d) return d.status();
  auto ids = read_ids(call.inputs.at(0), d->vocab);
  if (!ids) return ids.status();
  const Tensor& table = call.inputs.at(1);
  const Tensor& y = call.outputs.at(0);
  const char* tp = static_cast<const char*>(table.host_data());
  char* yp = static_cast<char*>(y.host_data());
  if (tp == nullptr || yp == nullptr) return Status::bad_input("avx512 embedding: a tensor is not in host memory");
  const int64_t bytes = static_cast<int64_t>(dtype_size(table.dtype));
  const int64_t D = d->dim, T = d->tokens;
  const bool rows = table.strides[1] == 1 && y.strides[1] == 1;
  const int64_t per_task = std::max<int64_t>(1, 65536 / (D * bytes));
  parallel_tasks((T + per_task - 1) / per_task, T * D, [&](int64_t task) {
    const int64_t t1 = std::min(T, (task + 1) * per_task);
    for (int64_t t = task * per_task; t < t1; ++t) {
      const char* src = tp + (*ids)[t] * table.strides[0] * bytes;
      char* dst = yp + t * y.strides[0] * bytes;
      if (rows) {
        std::memcpy(dst, src, static_cast<size_t>(D * bytes));
      } else {
        for (int64_t c = 0; c < D; ++c)
          std::memcpy(dst + c * y.strides[1] * bytes, src + c * table.strides[1] * bytes, static_cast<size_t>(bytes));
      }
    }
  });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("embedding", {DType::f32, DType::f16, DType::bf16}, embedding_supports,
                              run_embedding));

}  // namespace
}  // namespace dnnb::avx512
