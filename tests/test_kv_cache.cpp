// kv_cache's problem rules (suites/ops/kv_cache_desc.h) and what its check catches: a kernel
// that reads one position past a sequence's length meets the NaN the fill leaves there, and one
// that does not store the token leaves the caches unlike the reference's; with Gemma 2's
// attention, one that ignores the window reads the NaN before it and one that ignores the softcap
// is off. All wrap the registered reference, so the cases are the op's own random cases.
#include <gtest/gtest.h>

#include <cstring>

#include "core/check.h"
#include "core/device.h"
#include "core/host_device.h"
#include "reference/kv_cache.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb {
namespace {

ops::KvCacheDesc desc(const std::string& text) {
  auto p = Problem::parse(text);
  EXPECT_TRUE(p.is_ok()) << text;
  auto d = ops::kv_cache_desc(*p);
  EXPECT_TRUE(d.is_ok()) << text << ": " << d.status().message;
  return *d;
}

TEST(KvCache, PositionsAndDefaults) {
  const auto d = desc("kv_cache:bf16:3x4x40x64:kv=2");
  EXPECT_EQ(d.cache, DType::bf16);
  EXPECT_EQ(d.steps, 3);
  EXPECT_EQ(d.group(), 2);
  EXPECT_EQ(d.pos0(0), 37);  // C - steps
  EXPECT_EQ(d.pos0(1), 18);
  EXPECT_EQ(d.pos0(2), 0);   // the last sequence's cache starts empty
  EXPECT_EQ(d.step0_positions(), 38 + 19 + 1);
  const auto full = desc("kv_cache:bf16:3x4x40x64:lens=full,steps=1,cache=q8_0");
  for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(full.pos0(b), 39);
  // Bytes: both caches' positions read, in q8_0's 34-byte blocks.
  EXPECT_GT(ops::kv_cache_bytes(full), 2.0 * 3 * 4 * 40 * 2 * 34);
}

TEST(KvCache, BadProblemsNameTheirParameter) {
  for (auto [text, key] : {std::pair{"kv_cache:f16:2x4x16x64:cache=q4_0", "cache=q4_0"},
                           {"kv_cache:f16:2x4x16x48:cache=q8_0", "multiple of 32"},
                           {"kv_cache:f16:2x4x16x64:kv=3", "kv=3"},
                           {"kv_cache:f16:2x4x16x64:steps=17", "steps=17"},
                           {"kv_cache:f16:2x4x16x64:lens=long", "lens=long"},
                           {"kv_cache:f16:2x4x16x64:softcap=0", "softcap=0"},
                           {"kv_cache:f16:2x4x16x64:window=0", "window=0"},
                           {"kv_cache:f16:2x4x16:kv=2", "BxHxCxD"}}) {
    auto p = Problem::parse(text);
    ASSERT_TRUE(p.is_ok()) << text;
    auto d = ops::kv_cache_desc(*p);
    ASSERT_FALSE(d.is_ok()) << text;
    EXPECT_EQ(d.status().code, StatusCode::bad_input);
    EXPECT_NE(d.status().message.find(key), std::string::npos) << d.status().message;
  }
}

TEST(KvCache, WindowPositions) {
  const auto d = desc("kv_cache:f32:3x4x40x64:kv=2,softcap=50,window=16");
  EXPECT_EQ(d.softcap, 50);
  EXPECT_EQ(d.window, 16);
  EXPECT_EQ(d.first(37), 22);  // positions 22..37: 16
  EXPECT_EQ(d.first(15), 0);
  EXPECT_EQ(d.step0_positions(), 16 + 16 + 1);
  EXPECT_EQ(desc("kv_cache:f32:3x4x40x64:kv=2").first(37), 0);
}

// The reference run on the call's inputs after `tamper` changed them (host memory: the cpu device).
Implementation tampered(const char* variant, void (*tamper)(OpCall&, std::vector<Tensor>&)) {
  Implementation impl;
  impl.op = "kv_cache";
  impl.backend = "reference";
  impl.variant = variant;
  impl.dtypes = {DType::f32, DType::f16, DType::bf16};
  impl.supports = [](const Problem&, const DeviceRuntime& d) {
    return d.host_accessible() ? Status::ok() : Status::unsupported("host only");
  };
  impl.run = [tamper](OpCall& call) -> Status {
    std::vector<Tensor> inputs = call.inputs;
    tamper(call, inputs);
    auto out = empty_tensor(scratch_host(), DType::f64, call.outputs[0].shape);
    if (!out) return out.status();
    std::vector<Tensor> outputs{*out};
    DNNB_TRY(reference::kv_cache(call.problem, inputs, outputs));
    for (int64_t i = 0; i < out->numel(); ++i)
      store_element(call.outputs[0].host_data(), call.outputs[0].dtype, i,
                    static_cast<const double*>(out->host_data())[i]);
    return Status::ok();
  };
  return impl;
}

CaseResult run(const Implementation& impl, const std::string& problem) {
  PlannedCase pc;
  pc.id = *CaseId::parse(problem + "@reference/" + impl.variant + ":0");
  pc.spec = Registry::instance().find_op("kv_cache");
  pc.impl = &impl;
  pc.device = DeviceSet::instance().first(DeviceKind::cpu);
  FixtureManifest manifest;
  return run_case(pc, manifest, CheckOptions{});
}

TEST(KvCache, CheckCatchesReadsPastTheLengthAndAMissingStore) {
  ASSERT_NE(Registry::instance().find_op("kv_cache"), nullptr);
  const Implementation honest = tampered("test_honest", [](OpCall&, std::vector<Tensor>&) {});
  const Implementation reads_past = tampered("test_reads_past", [](OpCall& call, std::vector<Tensor>& in) {
    // The token goes one position further, so the query also reads a position never written.
    auto* pos = static_cast<int32_t*>(call.inputs[3].host_data());
    static thread_local std::vector<int32_t> shifted;
    shifted.assign(pos, pos + call.inputs[3].numel());
    const int64_t capacity = ops::kv_cache_desc(call.problem)->capacity;
    for (auto& p : shifted)
      if (p + 1 < capacity) p += 1;  // the sequences with room: the last one's start empty
    auto t = empty_tensor(scratch_host(), DType::i32, call.inputs[3].shape);
    std::memcpy(t->host_data(), shifted.data(), shifted.size() * sizeof(int32_t));
    in[3] = *t;
  });
  const Implementation no_store = tampered("test_no_store", [](OpCall&, std::vector<Tensor>& in) {
    for (size_t i : {size_t{4}, size_t{5}}) in[i] = *to_host(in[i]);  // stores into a copy
  });
  for (const char* problem : {"kv_cache:bf16:3x4x40x64:kv=2,cache=q8_0", "kv_cache:f16:2x4x24x64:cache=f8_e4m3fn"}) {
    EXPECT_EQ(run(honest, problem).status, StatusCode::ok) << problem << ": " << run(honest, problem).reason;
    CaseResult past = run(reads_past, problem);
    EXPECT_EQ(past.status, StatusCode::mismatch) << problem;
    EXPECT_NE(past.reason.find("NaN"), std::string::npos) << past.reason;
    CaseResult missing = run(no_store, problem);
    EXPECT_EQ(missing.status, StatusCode::mismatch) << problem;
  }
}

// The reference run as if the problem had no `key` (a kernel that ignores the parameter).
Implementation ignoring(const char* variant) {
  Implementation impl = tampered(variant, [](OpCall&, std::vector<Tensor>&) {});
  const std::string key = std::strcmp(variant, "test_no_window") == 0 ? "window" : "softcap";
  impl.run = [key](OpCall& call) -> Status {
    Problem p = call.problem;
    p.params.erase(key);
    auto out = empty_tensor(scratch_host(), DType::f64, call.outputs[0].shape);
    if (!out) return out.status();
    std::vector<Tensor> outputs{*out};
    DNNB_TRY(reference::kv_cache(p, call.inputs, outputs));
    for (int64_t i = 0; i < out->numel(); ++i)
      store_element(call.outputs[0].host_data(), call.outputs[0].dtype, i,
                    static_cast<const double*>(out->host_data())[i]);
    return Status::ok();
  };
  return impl;
}

TEST(KvCache, CheckCatchesAnIgnoredWindowOrSoftcap) {
  const Implementation honest = tampered("test_honest", [](OpCall&, std::vector<Tensor>&) {});
  const Implementation no_window = ignoring("test_no_window"), no_cap = ignoring("test_no_softcap");
  const std::string problem = "kv_cache:bf16:3x4x40x64:kv=2,scale=1,softcap=5,window=16";
  EXPECT_EQ(run(honest, problem).status, StatusCode::ok) << run(honest, problem).reason;
  CaseResult wide = run(no_window, problem);
  EXPECT_EQ(wide.status, StatusCode::mismatch);
  EXPECT_NE(wide.reason.find("NaN"), std::string::npos) << wide.reason;
  EXPECT_EQ(run(no_cap, problem).status, StatusCode::mismatch);
}

}  // namespace
}  // namespace dnnb
