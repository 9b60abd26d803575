// A block's launches go through DeviceRuntime::run_recorded (a CUDA device records them once as
// a graph and replays it), keyed by the problem and every operand's buffer, one step a node
// after the nodes whose values it reads or writes; a block holding a node whose op defers its
// input checks (embedding) runs launch by launch. Shown on avx512 with a host device that
// counts the keys it is given.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/host_device.h"
#include "core/block.h"
#include "core/check.h"
#include "core/plan.h"
#include "core/registry.h"
#include "suites/blocks/block_spec.h"

namespace dnnb {
namespace {

// cpu:0 as it is, except that run_recorded keeps each key before running the launches.
class KeyCountingDevice final : public DeviceRuntime {
 public:
  explicit KeyCountingDevice(DeviceRuntime& cpu) : cpu_(cpu) {}
  const DeviceInfo& info() const override { return cpu_.info(); }
  bool host_accessible() const override { return cpu_.host_accessible(); }
  Result<BufferPtr> allocate(size_t bytes) override { return cpu_.allocate(bytes); }
  Status upload(Buffer& dst, size_t at, const void* src, size_t bytes) override { return cpu_.upload(dst, at, src, bytes); }
  Status download(void* dst, const Buffer& src, size_t at, size_t bytes) override { return cpu_.download(dst, src, at, bytes); }
  Status synchronize() override { return cpu_.synchronize(); }
  void release(Buffer& buffer) noexcept override { cpu_.release(buffer); }
  Status run_recorded(const std::string& key, const std::vector<LaunchStep>& steps) override {
    keys.push_back(key);
    return DeviceRuntime::run_recorded(key, steps);
  }
  std::vector<std::string> keys;

 private:
  DeviceRuntime& cpu_;
};

struct BlockCall {
  std::vector<Tensor> inputs, outputs;
  Tensor workspace;
};

// Fresh operands of `problem` on cpu:0 for `impl`.
BlockCall make_call(const OpSpec& spec, const Implementation& impl, const Problem& problem, DeviceRuntime& cpu) {
  BlockCall c;
  auto sig = spec.signature(problem);
  EXPECT_TRUE(sig.is_ok());
  auto inputs = make_random_inputs(spec, problem, *sig);
  EXPECT_TRUE(inputs.is_ok());
  c.inputs = *inputs;
  for (const TensorSpec& out : sig->outputs) {
    auto t = empty_tensor(cpu, out.dtype, out.shape);
    EXPECT_TRUE(t.is_ok());
    c.outputs.push_back(*t);
  }
  auto ws = make_workspace(impl, problem, cpu);
  EXPECT_TRUE(ws.is_ok());
  c.workspace = *ws;
  return c;
}

TEST(BlockRecord, LaunchesAreRecordedUnderAKeyOfTheProblemAndEveryBuffer) {
  const Problem problem = *Problem::parse("llama_decode:f32:2x1x64:ctx=12,ffn=96,heads=4,kv=2");
  const OpSpec* spec = Registry::instance().find_op(problem.op);
  const Implementation* impl = Registry::instance().find_implementation(problem.op, "avx512", "");
  DeviceRuntime* cpu = DeviceSet::instance().first(DeviceKind::cpu);
  ASSERT_NE(spec, nullptr);
  if (!impl || !cpu || !impl->supports(problem, *cpu).is_ok()) GTEST_SKIP() << "no avx512 llama_decode here";
  KeyCountingDevice device(*cpu);
  BlockCall a = make_call(*spec, *impl, problem, *cpu);
  OpCall first{problem, device, a.inputs, a.outputs, a.workspace};
  ASSERT_TRUE(impl->run(first).is_ok());
  ASSERT_TRUE(impl->run(first).is_ok());
  ASSERT_EQ(device.keys.size(), 2u);
  EXPECT_EQ(device.keys[0], device.keys[1]);  // the same launches: one recording replayed
  EXPECT_NE(device.keys[0].find(problem.to_string()), std::string::npos) << device.keys[0];

  // Another output buffer is another recording (the graph holds the pointers it was given).
  BlockCall b = make_call(*spec, *impl, problem, *cpu);
  OpCall second{problem, device, a.inputs, b.outputs, a.workspace};
  ASSERT_TRUE(impl->run(second).is_ok());
  ASSERT_EQ(device.keys.size(), 3u);
  EXPECT_NE(device.keys[2], device.keys[0]);
}

TEST(BlockRecord, ABlockWithDeferredInputChecksIsNeverRecorded) {
  ASSERT_TRUE(Registry::instance().find_op("embedding")->deferred_input_checks);
  const Problem problem = *Problem::parse("gemma2_lm:f32:1x1x32:ffn=48,head_dim=16,heads=2,kv=1,prompt=1,steps=1,vocab=40");
  const OpSpec* spec = Registry::instance().find_op(problem.op);
  const Implementation* impl = Registry::instance().find_implementation(problem.op, "avx512", "");
  DeviceRuntime* cpu = DeviceSet::instance().first(DeviceKind::cpu);
  ASSERT_NE(spec, nullptr);
  if (!impl || !cpu || !impl->supports(problem, *cpu).is_ok()) GTEST_SKIP() << "no avx512 gemma2_lm here";
  KeyCountingDevice device(*cpu);
  BlockCall a = make_call(*spec, *impl, problem, *cpu);
  OpCall call{problem, device, a.inputs, a.outputs, a.workspace};
  ASSERT_TRUE(impl->run(call).is_ok());
  EXPECT_TRUE(device.keys.empty());  // its embedding node keeps host state per launch
}

// The steps of llama_decode: q, k and v each follow the norm alone (so they may run side by
// side), the cache node follows both ropes and v and every earlier user of the caches, gate and
// up follow the second norm alone.
TEST(BlockRecord, NodesFollowOnlyTheNodesWhoseValuesTheyTouch) {
  auto graph = block_graph(*Problem::parse("llama_decode:f32:2x1x64:ctx=12,ffn=96,heads=4,kv=2"));
  ASSERT_TRUE(graph.is_ok()) << graph.status().message;
  std::map<std::string, size_t> at;
  for (size_t n = 0; n < graph->nodes.size(); ++n) at[graph->nodes[n].name] = n;
  for (const char* name : {"input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                           "self_attn.kv_cache", "mlp.gate_proj", "mlp.up_proj", "mlp.act"})
    ASSERT_TRUE(at.count(name)) << name;
  const auto after = node_dependencies(*graph);
  const std::vector<size_t> norm1 = {at["input_layernorm"]};
  EXPECT_EQ(after[at["self_attn.q_proj"]], norm1);
  EXPECT_EQ(after[at["self_attn.k_proj"]], norm1);
  EXPECT_EQ(after[at["self_attn.v_proj"]], norm1);
  const auto& cache = after[at["self_attn.kv_cache"]];
  for (const char* name : {"self_attn.q_rope", "self_attn.k_rope", "self_attn.v_proj"})
    EXPECT_NE(std::find(cache.begin(), cache.end(), at[name]), cache.end()) << name;
  const std::vector<size_t> norm2 = {at["post_attention_layernorm"]};
  EXPECT_EQ(after[at["mlp.gate_proj"]], norm2);
  EXPECT_EQ(after[at["mlp.up_proj"]], norm2);
  const auto& act = after[at["mlp.act"]];
  EXPECT_NE(std::find(act.begin(), act.end(), at["mlp.gate_proj"]), act.end());
  EXPECT_NE(std::find(act.begin(), act.end(), at["mlp.up_proj"]), act.end());
}

// A node whose op keeps device-wide counters follows every earlier node.
TEST(BlockRecord, CountersNodesRunApart) {
  ASSERT_TRUE(Registry::instance().find_op("cross_entropy")->device_wide_counters);
  ASSERT_FALSE(Registry::instance().find_op("gemv")->device_wide_counters);
}

}  // namespace
}  // namespace dnnb
