// The backward of the gating ops (swiglu_bwd, geglu_bwd): a, b, dy -> da, db, one pass over
// the inputs writing both outputs. The inputs are planned as in the elementwise driver
// (elementwise.h: tensors dense like the outputs as one long row, strided ones gathered per
// row into scratch); db shares da's plan (both are outputs of the same shape). Each op supplies
// Op::operator()(const Vecs<K>* {a, b, dy}) -> GluGrads<K>, computed in f32 and rounded once
// per output, and the sigmoid with its complement that both gates need (sigmoid_pair).
#pragma once
#include <array>

#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {

template <int K>
struct GluGrads {
  Vecs<K> da, db;
};

// s = sigmoid(x) and 1 - s, both without cancellation: with e = e^-|x|, s is 1/(1+e) for x >= 0
// and e/(1+e) for x < 0, and 1 - s the other one (sigmoid_v's form, avx512_math.h). full:
// one VDIVPS; half: the Newton-refined reciprocal (1 + e is in [1, 2]).
template <Accuracy A, int K>
DNNB_AVX512_INLINE void sigmoid_pair(const Vecs<K>& x, Vecs<K>& s, Vecs<K>& one_minus_s) {
  const Vecs<K> e = exp_clamped<A>(max_keep_nan(-104.0f, neg_abs(x)));
  const Vecs<K> one = splat<K>(1.0f);
  Vecs<K> r;
  if constexpr (A == Accuracy::full) {
    r = div(one, add(one, e));
  } else {
    r = reciprocal(add(one, e));
  }
  const Vecs<K> er = mul(e, r);
  const Masks<K> negative = is_negative(x);
  s = select(negative, er, r);
  one_minus_s = select(negative, r, er);
}

namespace detail {
// Scratch for a gathered or scattered span beyond avx512_common.h's four slots (three inputs
// and da take those): db's.
template <class T>
T* db_scratch(int64_t count) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}
}  // namespace detail

// Columns [c0, c0 + n) of row r. Stores are non-temporal (32 columns per step, 64-byte aligned)
// when `stream` and both outputs sit at the same offset from a 64-byte boundary, which the
// masked head aligns together; otherwise regular stores.
template <class Fmt, class Op>
DNNB_AVX512 void glu_bwd_tile(const ElementwisePlan<3>& plan, const HostRows& db_rows, const Op& op, int64_t r,
                              int64_t c0, int64_t n, bool stream) {
  using T = typename Fmt::storage;
  const T* src[3];
  for (int k = 0; k < 3; ++k) src[k] = read_span<T>(plan.in[k], r, c0, n, k);
  T* da = write_span<T>(plan.out, r, c0, n, 3);
  T* db = db_rows.col_stride() == 1 ? db_rows.row<T>(r) + c0 : detail::db_scratch<T>(n);
  auto one = [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    Vecs<1> v[3];
    for (int k = 0; k < 3; ++k) v[k].v[0] = m == 0xffff ? Fmt::load(src[k] + i) : Fmt::load(src[k] + i, m);
    const GluGrads<1> g = op(v);
    Fmt::store(da + i, g.da.v[0], m);
    Fmt::store(db + i, g.db.v[0], m);
  };
  auto two = [&](int64_t i) DNNB_AVX512_LAMBDA {
    Vecs<2> v[3];
    for (int k = 0; k < 3; ++k) v[k] = Fmt::load2(src[k] + i);
    return op(v);
  };
  const auto da_addr = reinterpret_cast<uintptr_t>(da), db_addr = reinterpret_cast<uintptr_t>(db);
  int64_t i = 0;
  if (stream && da_addr % 64 == db_addr % 64 && da_addr % sizeof(T) == 0) {
    const int64_t misaligned = static_cast<int64_t>((da_addr % 64) / sizeof(T));
    const int64_t head = std::min(n, misaligned == 0 ? 0 : static_cast<int64_t>(64 / sizeof(T)) - misaligned);
    for (; i < head; i += 16) one(i, tail_mask(std::min<int64_t>(16, head - i)));
    i = head;
    for (; i + 32 <= n; i += 32) {
      const GluGrads<2> g = two(i);
      Fmt::stream2(da + i, g.da);
      Fmt::stream2(db + i, g.db);
    }
  }
  for (; i + 32 <= n; i += 32) {
    const GluGrads<2> g = two(i);
    Fmt::store2(da + i, g.da);
    Fmt::store2(db + i, g.db);
  }
  for (; i < n; i += 16) one(i, n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i));
  commit_span(plan.out, r, c0, n, da);
  commit_span(db_rows, r, c0, n, static_cast<const T*>(db));
}

// Plans and runs `make_op(Fmt{})` on call.inputs {a, b, dy} and call.outputs {da, db}.
template <class MakeOp>
Status glu_bwd(OpCall& call, MakeOp&& make_op) {
  if (call.inputs.size() != 3 || call.outputs.size() != 2)
    return Status::bad_input("avx512 " + call.problem.op + ": expects inputs (a, b, dy) and outputs (da, db)");
  const Tensor& da = call.outputs[0];
  const Tensor& db = call.outputs[1];
  if (db.shape != da.shape || db.dtype != da.dtype)
    return Status::bad_input("avx512 " + call.problem.op + ": da is " + da.describe() + ", db " + db.describe());
  for (const Tensor& t : call.inputs)
    if (t.shape != da.shape)
      return Status::bad_input("avx512 " + call.problem.op + ": input " + t.describe() + " does not have da's shape");
  auto plan = plan_elementwise<3>(da, {&call.inputs[0], &call.inputs[1], &call.inputs[2]});
  if (!plan) return plan.status();
  if (db.host_data() == nullptr) return Status::bad_input("avx512: output db not in host memory");
  // db addressed exactly as da: one long row when the plan made da one, else its rows.
  HostRows db_rows;
  if (plan->out.rows() == 1 && plan->out.cols() == da.numel() && da.numel() > 1) {
    if (!db.is_contiguous())
      return Status::unsupported("avx512 " + call.problem.op + ": db " + db.describe() + " is not contiguous like da");
    db_rows = detail::one_row(db, db.numel(), false);
  } else {
    auto rows = host_rows(db);
    if (!rows) return rows.status();
    db_rows = *rows;
  }
  if (db_rows.rows() != plan->out.rows() || db_rows.cols() != plan->out.cols())
    return Status::unsupported("avx512 " + call.problem.op + ": db's rows differ from da's");
  int64_t input_bytes = 0;
  for (const Tensor& t : call.inputs) input_bytes += tensor_bytes(t);
  return with_format(da.dtype, [&](auto fmt) -> Status {
    using Fmt = decltype(fmt);
    const auto op = make_op(fmt);
    const int64_t rows = plan->out.rows(), cols = plan->out.cols();
    if (rows * cols == 0) return Status::ok();
    const int64_t tiles_per_row = (cols + kTile - 1) / kTile;
    // Two outputs: streaming pays off when the whole footprint passes the last-level cache.
    const bool stream = stream_rows(plan->out, input_bytes + tensor_bytes(db));
    parallel_tasks(rows * tiles_per_row, rows * cols, [&](int64_t task) {
      const int64_t r = task / tiles_per_row, c0 = (task % tiles_per_row) * kTile;
      glu_bwd_tile<Fmt>(*plan, db_rows, op, r, c0, std::min(kTile, cols - c0), stream);
    });
    return Status::ok();
  });
}

}  // namespace dnnb::avx512
