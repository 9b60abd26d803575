// linear_bwd as oneDNN primitives, T = B M tokens (a 3-D x and dy read as rows of one matrix):
//   dx (T x K) = dy (T x N) w (N x K): a matmul, w as it is stored,
//   dw (N x K) = dy^T (N x T) x (T x K): a matmul, dy's desc with its strides swapped (no copy),
//   db (1 x N) = reduction_sum of dy over the rows (bias=1).
// The peer framework caches one primitive per problem (the dx matmul, which also decides whether
// oneDNN takes the problem); the other two are cached here under the same problem and layouts.
// oneDNN refuses (unsupported, with its status) the dtypes its CPU kernels lack on this machine,
// e.g. f16 without AVX512-FP16 or AMX-FP16.
#include <map>
#include <memory>
#include <mutex>

#include "kernels/peers/onednn/onednn_common.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::onednn {
namespace {

// A 2-D or 3-D layout as rows x cols (rows = B M); unsupported when a 3-D batch is not one run
// of rows.
Result<Layout> token_rows(const Layout& l, const char* name) {
  const size_t n = l.shape.size();
  if (n == 2) return l;
  if (n != 3) return Status::bad_input(std::string("onednn linear_bwd: ") + name + " is not 2-D or 3-D");
  if (l.shape[0] > 1 && l.strides[0] != l.shape[1] * l.strides[1])
    return Status::unsupported(std::string("onednn linear_bwd: ") + name + "'s batch items are not one run of rows");
  return Layout{l.dtype, {l.shape[0] * l.shape[1], l.shape[2]}, {l.strides[1], l.strides[2]}};
}

Layout swapped(const Layout& l) { return Layout{l.dtype, {l.shape[1], l.shape[0]}, {l.strides[1], l.strides[0]}}; }

// Arguments in OpCall order (x, w, dy; dx, dw, db): the ones a primitive does not read get -1.
constexpr int kUnused = -1;

// dx = dy w.
Result<Prepared> make_dx(const Problem&, const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto dy_rows = token_rows(in.at(2), "dy");
  if (!dy_rows) return dy_rows.status();
  auto dx_rows = token_rows(out.at(0), "dx");
  if (!dx_rows) return dx_rows.status();
  auto dy = memory_desc(*dy_rows);
  if (!dy) return dy.status();
  auto w = memory_desc(in.at(1));
  if (!w) return w.status();
  auto dx = memory_desc(*dx_rows);
  if (!dx) return dx.status();
  dnnl::matmul::desc desc(*dy, *w, *dx);
  dnnl::matmul::primitive_desc pd(desc, cpu_engine());
  Prepared prepared{dnnl::matmul(pd), {{kUnused, {}}, {DNNL_ARG_WEIGHTS, *w}, {DNNL_ARG_SRC, *dy}}, {{DNNL_ARG_DST, *dx}}};
  if (out.size() > 1) prepared.outputs.push_back({kUnused, {}});
  if (out.size() > 2) prepared.outputs.push_back({kUnused, {}});
  return prepared;
}

// dw = dy^T x.
Result<Prepared> make_dw(const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto dy_rows = token_rows(in.at(2), "dy");
  if (!dy_rows) return dy_rows.status();
  auto x_rows = token_rows(in.at(0), "x");
  if (!x_rows) return x_rows.status();
  auto dyt = memory_desc(swapped(*dy_rows));
  if (!dyt) return dyt.status();
  auto x = memory_desc(*x_rows);
  if (!x) return x.status();
  auto dw = memory_desc(out.at(1));
  if (!dw) return dw.status();
  dnnl::matmul::desc desc(*dyt, *x, *dw);
  dnnl::matmul::primitive_desc pd(desc, cpu_engine());
  Prepared prepared{dnnl::matmul(pd), {{DNNL_ARG_WEIGHTS, *x}, {kUnused, {}}, {DNNL_ARG_SRC, *dyt}},
                    {{kUnused, {}}, {DNNL_ARG_DST, *dw}}};
  if (out.size() > 2) prepared.outputs.push_back({kUnused, {}});
  return prepared;
}

// db (1 x N) = the sum of dy's rows; with one row (which oneDNN's reduction refuses), dy's row
// copied by a reorder.
Result<Prepared> make_db(const std::vector<Layout>& in, const std::vector<Layout>& out) {
  auto dy_rows = token_rows(in.at(2), "dy");
  if (!dy_rows) return dy_rows.status();
  auto dy = memory_desc(*dy_rows);
  if (!dy) return dy.status();
  const Layout& b = out.at(2);
  auto db = memory_desc(Layout{b.dtype, {1, b.shape.at(0)}, {b.shape.at(0) * b.strides.at(0), b.strides.at(0)}});
  if (!db) return db.status();
  Prepared prepared{{}, {{kUnused, {}}, {kUnused, {}}, {DNNL_ARG_SRC, *dy}},
                    {{kUnused, {}}, {kUnused, {}}, {DNNL_ARG_DST, *db}}};
  if (dy_rows->shape[0] == 1) {
    prepared.primitive = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), *dy, cpu_engine(), *db));
  } else {
    dnnl::reduction::desc desc(dnnl::algorithm::reduction_sum, *dy, *db, 0.0f, 0.0f);
    prepared.primitive = dnnl::reduction(dnnl::reduction::primitive_desc(desc, cpu_engine()));
  }
  return prepared;
}

// The dw and db primitives of a call, made on first use per problem and layout.
struct Rest {
  std::shared_ptr<const Prepared> dw, db;
};

Result<Rest> rest_of(OpCall& call, bool bias) {
  std::vector<Layout> in, out;
  std::string key = call.problem.to_string();
  for (const auto& t : call.inputs) {
    in.push_back(layout_of(t));
    key += "|" + t.describe();
  }
  for (const auto& t : call.outputs) {
    out.push_back(layout_of(t));
    key += "|" + t.describe();
  }
  static std::mutex mutex;
  static std::map<std::string, Rest> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  Rest rest;
  try {
    auto dw = make_dw(in, out);
    if (!dw) return dw.status();
    rest.dw = std::make_shared<const Prepared>(std::move(*dw));
    if (bias) {
      auto db = make_db(in, out);
      if (!db) return db.status();
      rest.db = std::make_shared<const Prepared>(std::move(*db));
    }
  } catch (const dnnl::error& e) {
    return Status::unsupported(describe(e) + " for linear_bwd " + dtype_name(call.problem.dtype));
  }
  cache.emplace(key, rest);
  return rest;
}

Status execute_linear_bwd(OpCall& call, const Prepared& dx) {
  auto d = ops::linear_bwd_desc(call.problem);
  if (!d) return d.status();
  DNNB_TRY(execute_bound(call, dx));
  auto rest = rest_of(call, d->bias);
  if (!rest) return rest.status();
  DNNB_TRY(execute_bound(call, *rest->dw));
  if (rest->db) DNNB_TRY(execute_bound(call, *rest->db));
  return Status::ok();
}

PeerOp linear_bwd_peer() {
  PeerOp op;
  op.op = "linear_bwd";
  op.dtypes = {DType::f32, DType::f16, DType::bf16};
  op.make = make_dx;
  op.execute = execute_linear_bwd;
  op.compute_unit_for = product_unit;
  return op;
}

DNNB_REGISTER(register_peer(linear_bwd_peer()));

}  // namespace
}  // namespace dnnb::onednn
