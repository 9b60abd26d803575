// The elementwise driver shared by unary, binary and lerp: N inputs broadcast to the output
// shape, one vector function applied per 16 lanes. Tensors that are dense like the output
// (or one repeated value) collapse to a single long row; anything else goes row by row with
// unit-stride columns read in place, stride-0 columns as one broadcast register, and other
// strides gathered into per-thread scratch. Work is cut into tiles of kTile columns.
#pragma once
#include <array>

#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

template <int N>
struct ElementwisePlan {
  HostRows out;
  std::array<HostRows, N> in;
};

namespace detail {
// True when the view, on a dense tensor of `shape`, reads element i from offset i (stride 0
// allowed on every dim: then it is one repeated value). Size-1 dims do not matter.
inline bool dense_like(const Tensor& view, const Shape& shape, bool* repeated) {
  const Shape dense = contiguous_strides(shape);
  bool all_zero = true, all_dense = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    all_zero = all_zero && view.strides[d] == 0;
    all_dense = all_dense && view.strides[d] == dense[d];
  }
  *repeated = all_zero;
  return all_zero || all_dense;
}
inline HostRows one_row(const Tensor& view, int64_t numel, bool repeated) {
  HostRows h;
  h.data = static_cast<char*>(view.host_data());
  h.element_size = dtype_size(view.dtype);
  h.index.rows = 1;
  h.index.cols = numel;
  h.index.col_stride = repeated ? 0 : 1;
  return h;
}
}  // namespace detail

template <int N>
Result<ElementwisePlan<N>> plan_elementwise(const Tensor& out, const std::array<const Tensor*, N>& in) {
  ElementwisePlan<N> plan;
  std::array<Tensor, N> views;
  for (int k = 0; k < N; ++k) {
    if (in[k]->dtype != out.dtype)
      return Status::bad_input(std::string("avx512: input ") + std::to_string(k) + " is " +
                               dtype_name(in[k]->dtype) + ", output is " + dtype_name(out.dtype));
    auto v = in[k]->broadcast_to(out.shape);
    if (!v) return v.status();
    views[k] = *v;
    if (views[k].host_data() == nullptr) return Status::bad_input("avx512: input not in host memory");
  }
  if (out.host_data() == nullptr) return Status::bad_input("avx512: output not in host memory");
  bool flat = true, repeated = false;
  std::array<bool, N> in_repeated{};
  flat = detail::dense_like(out, out.shape, &repeated) && !repeated;
  for (int k = 0; k < N && flat; ++k) flat = detail::dense_like(views[k], out.shape, &in_repeated[k]);
  if (flat && out.numel() > 1) {
    plan.out = detail::one_row(out, out.numel(), false);
    for (int k = 0; k < N; ++k) plan.in[k] = detail::one_row(views[k], out.numel(), in_repeated[k]);
    return plan;
  }
  auto o = host_rows(out);
  if (!o) return o.status();
  plan.out = *o;
  for (int k = 0; k < N; ++k) {
    auto h = host_rows(views[k]);
    if (!h) return h.status();
    plan.in[k] = *h;
  }
  return plan;
}

constexpr int64_t kTile = 8192;

// One tile: columns [c0, c0 + n) of row r. Scratch slots: inputs 0..N-1, output 3.
// op(v) maps N input Vecs<K> (a pointer to N of them) to the output's Vecs<K>, for K = 2
// (32 columns per step: two independent dependency chains, see Vecs) and K = 1 (masked
// heads and tails); an Op with `static constexpr bool kQuads = true` also gets K = 4 for the
// body, 64 columns per step (more chains in flight for the long transcendental ones).
template <class Fmt, class Op, int N>
DNNB_AVX512 void elementwise_tile(const ElementwisePlan<N>& plan, const Op& op, int64_t r, int64_t c0,
                                  int64_t n, bool stream) {
  static_assert(N <= 3, "scratch slots 0..2 are for inputs, 3 for the output");
  using T = typename Fmt::storage;
  const T* src[N];
  __m512 repeated[N];
  bool is_repeated[N];
  Ahead ahead[N];  // DNNB_AVX512_ELTWISE_AHEAD (avx512_common.h); off: bytes == 0
  bool any_ahead = false;
  for (int k = 0; k < N; ++k) {
    is_repeated[k] = plan.in[k].col_stride() == 0;
    if (is_repeated[k]) {
      repeated[k] = _mm512_set1_ps(Fmt::to_float(*plan.in[k].template row<const T>(r)));
      src[k] = nullptr;
    } else {
      src[k] = read_span<T>(plan.in[k], r, c0, n, k);
      ahead[k] = ahead_of(plan.in[k], r, c0, n, eltwise_ahead_bytes);
      any_ahead = any_ahead || ahead[k].bytes > 0;
    }
  }
  // One predictable branch per 32 or 64 columns when off.
  auto fetch = [&](int64_t i, int64_t cols) DNNB_AVX512_LAMBDA {
    if (!any_ahead) return;
    for (int k = 0; k < N; ++k)
      if (ahead[k].bytes > 0) fetch_ahead(src[k], i, ahead[k], cols);
  };
  T* dst = write_span<T>(plan.out, r, c0, n, 3);
  auto one = [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    Vecs<1> v[N];
    for (int k = 0; k < N; ++k)
      v[k].v[0] = is_repeated[k] ? repeated[k] : (m == 0xffff ? Fmt::load(src[k] + i) : Fmt::load(src[k] + i, m));
    return op(v).v[0];
  };
  auto two = [&](int64_t i) DNNB_AVX512_LAMBDA {
    fetch(i, 32);
    Vecs<2> v[N];
    for (int k = 0; k < N; ++k) v[k] = is_repeated[k] ? Vecs<2>{{repeated[k], repeated[k]}} : Fmt::load2(src[k] + i);
    return op(v);
  };
  if constexpr (requires { requires Op::kQuads; }) {
    auto four = [&](int64_t i) DNNB_AVX512_LAMBDA {
      fetch(i, 64);
      Vecs<4> v[N];
      for (int k = 0; k < N; ++k) {
        const Vecs<2> lo = is_repeated[k] ? Vecs<2>{{repeated[k], repeated[k]}} : Fmt::load2(src[k] + i);
        const Vecs<2> hi = is_repeated[k] ? lo : Fmt::load2(src[k] + i + 32);
        v[k] = Vecs<4>{{lo.v[0], lo.v[1], hi.v[0], hi.v[1]}};
      }
      return op(v);
    };
    write_span_pairs<Fmt>(dst, n, stream, one, two, four);
  } else {
    write_span_pairs<Fmt>(dst, n, stream, one, two);
  }
  commit_span(plan.out, r, c0, n, dst);
}

// input_bytes: what the inputs hold (each read once, however broadcast), for stream_rows.
template <class Fmt, class Op, int N>
Status run_elementwise(const ElementwisePlan<N>& plan, const Op& op, int64_t input_bytes) {
  const int64_t rows = plan.out.rows(), cols = plan.out.cols();
  if (rows * cols == 0) return Status::ok();
  const int64_t tiles_per_row = (cols + kTile - 1) / kTile;
  const bool stream = stream_rows(plan.out, input_bytes);
  parallel_tasks(rows * tiles_per_row, rows * cols, [&](int64_t task) {
    const int64_t r = task / tiles_per_row, c0 = (task % tiles_per_row) * kTile;
    elementwise_tile<Fmt, Op, N>(plan, op, r, c0, std::min(kTile, cols - c0), stream);
  });
  return Status::ok();
}

// Plans and runs `make_op(Fmt{})` over call.outputs[0] and the given inputs.
template <int N, class MakeOp>
Status elementwise(OpCall& call, const std::array<const Tensor*, N>& inputs, MakeOp&& make_op) {
  const Tensor& out = call.outputs.at(0);
  auto plan = plan_elementwise<N>(out, inputs);
  if (!plan) return plan.status();
  int64_t input_bytes = 0;
  for (const Tensor* t : inputs) input_bytes += tensor_bytes(*t);
  return with_format(out.dtype, [&](auto fmt) -> Status {
    using Fmt = decltype(fmt);
    return run_elementwise<Fmt>(*plan, make_op(fmt), input_bytes);
  });
}

}  // namespace dnnb::avx512
