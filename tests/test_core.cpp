// Core pieces: shapes, views, row addressing, problem and case-id round trips, sha256,
// the comparison metrics and tolerance policy.
#include <gtest/gtest.h>

#include <cmath>

#include "core/compare.h"
#include "core/dtype.h"
#include "core/host_device.h"
#include "core/problem.h"
#include "core/sha256.h"
#include "core/tensor.h"

namespace dnnb {
namespace {

Tensor iota_tensor(const Shape& shape) {
  auto t = empty_tensor(scratch_host(), DType::f32, shape);
  EXPECT_TRUE(t.is_ok());
  auto* d = static_cast<float*>(t->host_data());
  for (int64_t i = 0; i < t->numel(); ++i) d[i] = static_cast<float>(i);
  return *t;
}

float at(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = t.offset;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides[d];
  return static_cast<const float*>(t.buffer->handle)[off];
}

TEST(Shape, ParseAndPrintRoundTrip) {
  auto s = parse_shape("64x4096");
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(*s, (Shape{64, 4096}));
  EXPECT_EQ(shape_to_string(*s), "64x4096");
  EXPECT_FALSE(parse_shape("64xx4").is_ok());
  EXPECT_FALSE(parse_shape("-3").is_ok());
  EXPECT_EQ(shape_to_string({}), "1");
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(*broadcast_shapes({64, 1}, {1, 33}), (Shape{64, 33}));
  EXPECT_EQ(*broadcast_shapes({2, 7, 33}, {33}), (Shape{2, 7, 33}));
  EXPECT_FALSE(broadcast_shapes({3, 4}, {5, 4}).is_ok());
}

TEST(Tensor, ViewsDoNotCopy) {
  Tensor t = iota_tensor({2, 3, 4});
  auto p = t.permute({2, 0, 1});
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->buffer, t.buffer);
  EXPECT_EQ(p->shape, (Shape{4, 2, 3}));
  EXPECT_EQ(at(*p, {3, 1, 2}), at(t, {1, 2, 3}));
  auto s = t.slice(2, 1, 2);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(at(*s, {1, 2, 0}), at(t, {1, 2, 1}));
  EXPECT_FALSE(s->is_contiguous());
  EXPECT_FALSE(s->reshape({12}).is_ok());  // needs a copy
  EXPECT_TRUE(t.reshape({6, 4}).is_ok());
  EXPECT_FALSE(t.slice(2, 3, 2).is_ok());
}

TEST(Tensor, BroadcastHasZeroStrides) {
  Tensor row = iota_tensor({1, 5});
  EXPECT_TRUE(row.can_broadcast_to({7, 5}));
  EXPECT_FALSE(row.can_broadcast_to({7, 4}));
  auto b = row.broadcast_to({7, 5});
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->strides, (Shape{0, 1}));
  EXPECT_EQ(at(*b, {6, 3}), 3.0f);
}

TEST(RowIndex, CollapsesContiguousOuterDims) {
  Tensor t = iota_tensor({2, 3, 4});
  auto ri = row_index(t);
  ASSERT_TRUE(ri.is_ok());
  EXPECT_EQ(ri->rows, 6);
  EXPECT_EQ(ri->cols, 4);
  EXPECT_TRUE(ri->uniform_rows());
  EXPECT_EQ(ri->row_stride(), 4);
}

TEST(RowIndex, AddressesPermutedAndBroadcastViews) {
  Tensor t = iota_tensor({2, 3, 4});
  Tensor p = *t.permute({1, 0, 2});  // 3x2x4, outer strides 4, 12: not collapsible
  auto ri = row_index(p);
  ASSERT_TRUE(ri.is_ok());
  EXPECT_EQ(ri->outer_dims, 2);
  for (int64_t r = 0; r < ri->rows; ++r) {
    const int64_t i = r / 2, j = r % 2;
    EXPECT_EQ(static_cast<const float*>(t.buffer->handle)[ri->offset + ri->row_offset(r) + 1], at(p, {i, j, 1}));
  }
  Tensor b = *iota_tensor({2, 1, 4}).broadcast_to({2, 3, 4});
  auto rb = row_index(b);
  ASSERT_TRUE(rb.is_ok());
  EXPECT_EQ(rb->rows, 6);
  EXPECT_EQ(rb->row_offset(2), 0);  // row (0, 2) repeats row (0, 0)
  EXPECT_EQ(rb->row_offset(3), 4);
}

TEST(Tensor, CopyGathersNonContiguous) {
  Tensor t = iota_tensor({3, 4});
  Tensor tt = *t.transpose(0, 1);
  auto c = to_host(tt);
  ASSERT_TRUE(c.is_ok());
  ASSERT_TRUE(c->is_contiguous());
  EXPECT_EQ(static_cast<float*>(c->host_data())[1], at(t, {1, 0}));
  // Scatter into a padded view keeps the padding bytes.
  Tensor storage = iota_tensor({4, 6});
  Tensor padded = *storage.slice(1, 0, 3);
  Tensor src = iota_tensor({4, 3});
  ASSERT_TRUE(copy_tensor(padded, src).is_ok());
  EXPECT_EQ(at(storage, {2, 1}), 7.0f);
  EXPECT_EQ(at(storage, {2, 4}), 16.0f);  // untouched padding
}

TEST(Problem, RoundTripsAndSortsParams) {
  auto p = Problem::parse("softmax:bf16:64x4096:scale=0.125,mask=64x4096");
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->to_string(), "softmax:bf16:64x4096:mask=64x4096,scale=0.125");
  EXPECT_DOUBLE_EQ(*p->get_double("scale", 1.0), 0.125);
  EXPECT_FALSE(p->get_double("mask", 0).is_ok());
  EXPECT_FALSE(Problem::parse("softmax:f33:4x4").is_ok());
  EXPECT_FALSE(Problem::parse("softmax:f32:4x4:scale").is_ok());
  EXPECT_FALSE(Problem::parse("softmax:f32:4x4:a=1,a=2").is_ok());
  // Same problem, same seed; a different parameter, another seed.
  EXPECT_EQ(p->seed(), Problem::parse("softmax:bf16:64x4096:mask=64x4096,scale=0.125")->seed());
  EXPECT_NE(p->seed(), Problem::parse("softmax:bf16:64x4096:mask=64x4096,scale=0.25")->seed());
}

TEST(CaseId, RoundTrips) {
  for (const char* text : {"rmsnorm:bf16:64x4096:eps=1e-6@cuda:0", "relu:f32:7x33@avx512",
                           "softmax:f16:1x8192:scale=2@opencl/local_reduce:0.1"}) {
    auto id = CaseId::parse(text);
    ASSERT_TRUE(id.is_ok()) << text << ": " << id.status().message;
    EXPECT_EQ(id->to_string(), text);
  }
  auto id = *CaseId::parse("softmax:f16:1x8192@opencl/local_reduce:0.1");
  EXPECT_EQ(id.backend, "opencl");
  EXPECT_EQ(id.variant, "local_reduce");
  EXPECT_EQ(id.device_id(), "opencl:0.1");
  EXPECT_FALSE(CaseId::parse("relu:f32:4x4@nosuch").is_ok());
  EXPECT_FALSE(CaseId::parse("relu:f32:4x4").is_ok());
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Compare, FindsWorstCoordinateAndPoison) {
  Tensor expected = *empty_tensor(scratch_host(), DType::f64, {3, 4});
  Tensor got = *empty_tensor(scratch_host(), DType::f32, {3, 4});
  for (int i = 0; i < 12; ++i) {
    static_cast<double*>(expected.host_data())[i] = 1.0 + i;
    static_cast<float*>(got.host_data())[i] = 1.0f + i;
  }
  Tolerance tol = tolerance_for(ToleranceClass::elementwise, DType::f32, 1.0);
  Metrics ok = compare_outputs(got, expected, tol);
  EXPECT_TRUE(metrics_pass(ok, nullptr));
  static_cast<float*>(got.host_data())[6] += 1e-3f;  // element [1, 2]
  Metrics bad = compare_outputs(got, expected, tol);
  std::string why;
  EXPECT_FALSE(metrics_pass(bad, &why));
  EXPECT_EQ(bad.worst_coord, "[1, 2]");
  EXPECT_NE(why.find("[1, 2]"), std::string::npos);
  static_cast<float*>(got.host_data())[6] = std::nanf("");
  EXPECT_EQ(compare_outputs(got, expected, tol).nan_mismatch, 1);
}

TEST(Compare, MistrustsMostlyZeroOutputs) {
  Tensor expected = *empty_tensor(scratch_host(), DType::f64, {64});
  Tensor got = *empty_tensor(scratch_host(), DType::f32, {64});
  for (int i = 0; i < 64; ++i) {
    static_cast<double*>(expected.host_data())[i] = 1e-30 * (i + 1);
    static_cast<float*>(got.host_data())[i] = 0.0f;
  }
  // Within an absolute tolerance, but the output proves nothing.
  Tolerance loose{1e-3, 1e-3};
  std::string why;
  EXPECT_FALSE(metrics_pass(compare_outputs(got, expected, loose), &why));
  EXPECT_NE(why.find("mistrusted"), std::string::npos);
}

// max and relu return one of their inputs: one ulp off (a neighbouring 16-bit key), or one
// subnormal step, is a wrong answer, and the selection class says so where exact's 1 ulp would not.
TEST(Tolerance, SelectionAcceptsOnlyTheInputItself) {
  Tensor expected = *empty_tensor(scratch_host(), DType::f64, {2, 4});
  Tensor got = *empty_tensor(scratch_host(), DType::bf16, {2, 4});
  const float values[8] = {1.5f, -3.25f, 0.0f, 1e-40f, 96.0f, -0.0f, 7.0f, -1e-39f};
  for (int i = 0; i < 8; ++i) {
    const uint16_t bits = f32_to_bf16(values[i]);
    static_cast<uint16_t*>(got.host_data())[i] = bits;
    static_cast<double*>(expected.host_data())[i] = bf16_to_f32(bits);
  }
  const Tolerance tol = tolerance_for(ToleranceClass::selection, DType::bf16, 1.0);
  EXPECT_EQ(tol.rtol, 0.0);
  EXPECT_EQ(tol.atol, 0.0);
  EXPECT_TRUE(metrics_pass(compare_outputs(got, expected, tol), nullptr));
  for (int i : {0, 3}) {  // a normal value's next key, then a subnormal's
    auto* bits = static_cast<uint16_t*>(got.host_data()) + i;
    ++*bits;
    std::string why;
    EXPECT_FALSE(metrics_pass(compare_outputs(got, expected, tol), &why)) << i;
    // ... which exact's one ulp (a subnormal step near zero) lets through.
    EXPECT_TRUE(metrics_pass(compare_outputs(got, expected, tolerance_for(ToleranceClass::exact, DType::bf16, 1.0)),
                             nullptr)) << i;
    --*bits;
  }
}

TEST(Tolerance, FollowsDtypeEpsilon) {
  EXPECT_DOUBLE_EQ(tolerance_for(ToleranceClass::exact, DType::bf16, 1).rtol, 0x1p-7);
  EXPECT_GT(tolerance_for(ToleranceClass::elementwise, DType::f16, 1).rtol,
            tolerance_for(ToleranceClass::elementwise, DType::f32, 1).rtol);
}

}  // namespace
}  // namespace dnnb
