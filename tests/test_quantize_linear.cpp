// quantize_linear and dequantize_linear bit for bit (docs/ops-family4.md, "quantize_linear and
// dequantize_linear"). check compares values against the reference and torch's fixtures; here:
//  - QlinearKernels.CheckProblemsBitExact: every implementation on every device here, every check
//    problem of both ops (per tensor and per channel along the first, a middle and the last dim,
//    contiguous, padded and transposed x, i8 and u8), against suites/ops/qlinear_desc.h's rules
//    computed on the host, byte for byte (quantize) or bit for bit (dequantize).
//  - QlinearKernels.NanAndInfinity: NaN (outside torch's contract: its result depends on its code
//    path) gives qmin on every backend, as the rule says; +-Inf saturate.
//  - QlinearKernels.OddOffsets: views that start off a 16-byte boundary and end in a partial
//    step; the bytes around y stay as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/host_device.h"
#include "suites/ops/qlinear_desc.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

// The rule's y for host inputs (x contiguous), as the bytes or f32 bits of each element.
std::vector<uint32_t> expected(const Problem& p, bool quantize, const std::vector<Tensor>& in) {
  auto d = ops::qlinear_desc(p, quantize);
  EXPECT_TRUE(d.is_ok());
  const auto* scale = static_cast<const float*>(in[1].host_data());
  const auto* zp = static_cast<const int32_t*>(in[2].host_data());
  std::vector<uint32_t> out(in[0].numel());
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    const int64_t c = d->channel_of(i);
    if (quantize) {
      const float x = static_cast<const float*>(in[0].host_data())[i];
      out[i] = static_cast<uint8_t>(ops::quantize_value(x, ops::qlinear_inv_scale(scale[c]), zp[c], d->qmin, d->qmax));
    } else {
      const uint8_t b = static_cast<const uint8_t*>(in[0].host_data())[i];
      const int32_t q = d->qtype == DType::i8 ? static_cast<int8_t>(b) : b;
      float v = ops::dequantize_value(q, scale[c], zp[c]);
      std::memcpy(&out[i], &v, 4);
    }
  }
  return out;
}

uint32_t element_bits(const void* base, size_t size, int64_t i) {
  uint32_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(base) + i * size, size);
  return bits;
}

// Runs `text` on every implementation and device with the random inputs (edited by `edit`), with
// x at an element offset of `x_skip` into its buffer and y at `y_skip` (contiguous x then), and
// compares every element with the rule.
template <class Edit>
void run_everywhere(const std::string& text, Edit&& edit, int64_t x_skip = 0, int64_t y_skip = 0) {
  SCOPED_TRACE(text);
  auto problem = Problem::parse(text);
  ASSERT_TRUE(problem.is_ok()) << problem.status().message;
  const bool quantize = problem->op == "quantize_linear";
  const OpSpec* spec = Registry::instance().find_op(problem->op);
  ASSERT_NE(spec, nullptr);
  auto sig = spec->signature(*problem);
  ASSERT_TRUE(sig.is_ok()) << sig.status().message;
  auto inputs = make_random_inputs(*spec, *problem, *sig);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message;
  edit(*inputs);
  const std::vector<uint32_t> want = expected(*problem, quantize, *inputs);
  const DType ydt = sig->outputs[0].dtype;
  const size_t ysize = dtype_size(ydt);
  const int64_t n = (*inputs)[0].numel(), spare = 40;
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  for (const auto& r : testing::runners(*problem, skipped)) {
    SCOPED_TRACE(r.label);
    std::vector<Tensor> args;
    auto x = [&]() -> Result<Tensor> {
      if (x_skip == 0) return make_device_input(*r.device, sig->inputs[0]);
      auto buf = empty_tensor(*r.device, sig->inputs[0].dtype, {n + spare});
      if (!buf) return buf.status();
      auto sliced = buf->slice(0, x_skip, n);
      if (!sliced) return sliced.status();
      return sliced->reshape(problem->shape);
    }();
    ASSERT_TRUE(x.is_ok()) << x.status().message;
    ASSERT_TRUE(copy_tensor(*x, (*inputs)[0]).is_ok());
    args.push_back(*x);
    for (int k = 1; k < 3; ++k) {
      auto t = empty_tensor(*r.device, sig->inputs[k].dtype, sig->inputs[k].shape);
      ASSERT_TRUE(t.is_ok());
      ASSERT_TRUE(copy_tensor(*t, (*inputs)[k]).is_ok());
      args.push_back(*t);
    }
    auto ybuf = empty_tensor(*r.device, ydt, {n + spare});
    ASSERT_TRUE(ybuf.is_ok());
    auto host_fill = empty_tensor(scratch_host(), ydt, {n + spare});
    ASSERT_TRUE(host_fill.is_ok());
    std::memset(host_fill->host_data(), 0x5A, (n + spare) * ysize);
    ASSERT_TRUE(copy_tensor(*ybuf, *host_fill).is_ok());
    auto ys = ybuf->slice(0, y_skip, n);
    ASSERT_TRUE(ys.is_ok());
    auto y = ys->reshape(problem->shape);
    ASSERT_TRUE(y.is_ok());
    OpCall call{*problem, *r.device, args, {*y}, Tensor{}};
    Status s = ran.time(r.label, text, [&] {
      Status st = r.impl->run(call);
      return st.is_ok() ? r.device->synchronize() : st;
    });
    ASSERT_TRUE(s.is_ok()) << s.message;
    auto whole = to_host(*ybuf);
    ASSERT_TRUE(whole.is_ok());
    const auto* bytes = static_cast<const uint8_t*>(whole->host_data());
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t have = element_bits(bytes + y_skip * ysize, ysize, i);
      if (have != want[i] && ++bad <= 5) {
        ADD_FAILURE() << "element " << i << ": got 0x" << std::hex << have << ", the rule gives 0x" << want[i];
      }
    }
    EXPECT_EQ(bad, 0) << bad << " of " << n << " elements differ";
    for (int64_t i = 0; i < (n + spare) * static_cast<int64_t>(ysize); ++i) {
      if (i < y_skip * static_cast<int64_t>(ysize) || i >= (y_skip + n) * static_cast<int64_t>(ysize)) {
        ASSERT_EQ(bytes[i], 0x5A) << "byte " << i << " of y's buffer outside the view written";
      }
    }
  }
  ran.print();
  testing::print_skipped(skipped);
}

TEST(QlinearKernels, CheckProblemsBitExact) {
  for (const char* op : {"quantize_linear", "dequantize_linear"}) {
    const OpSpec* spec = Registry::instance().find_op(op);
    ASSERT_NE(spec, nullptr);
    for (const ProblemText& pt : spec->check_problems)
      for (DType dt : pt.only.empty() ? spec->dtypes : pt.only)
        run_everywhere(std::string(op) + ":" + dtype_name(dt) + ":" + pt.text, [](std::vector<Tensor>&) {});
  }
}

TEST(QlinearKernels, NanAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const char* text : {"quantize_linear:f32:1000", "quantize_linear:f32:1000:y.dt=u8",
                           "quantize_linear:f32:40x25:axis=1", "quantize_linear:f32:64x32:axis=0,y.dt=u8"})
    run_everywhere(text, [&](std::vector<Tensor>& in) {
      auto* x = static_cast<float*>(in[0].host_data());
      for (int64_t i = 0; i < in[0].numel(); i += 3) x[i] = i % 2 ? nan : -nan;
      for (int64_t i = 1; i < in[0].numel(); i += 7) x[i] = i % 2 ? inf : -inf;
    });
}

TEST(QlinearKernels, OddOffsets) {
  for (const char* text : {"quantize_linear:f32:1000", "quantize_linear:f32:10x100:axis=0,y.dt=u8",
                           "quantize_linear:f32:100x10:axis=1", "dequantize_linear:i8:1000",
                           "dequantize_linear:u8:10x100:axis=0", "dequantize_linear:i8:100x10:axis=1"})
    run_everywhere(text, [](std::vector<Tensor>&) {}, 3, 5);
}

}  // namespace
}  // namespace dnnb
