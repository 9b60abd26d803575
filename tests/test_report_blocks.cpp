// `dnnblocks report`'s Blocks section (docs/report.md, "Blocks"): a block's results beside torch's
// of the same problem on the same device (params matched whatever their order and number form),
// its node cases (`bench --nodes`) summed with a shared problem counted once per node, and bad
// input in the block keys named.
#include <gtest/gtest.h>

#include <string>

#include "core/report/report_blocks.h"
#include "core/report/report_model.h"
#include "core/report/report_writers.h"

namespace dnnb::report {
namespace {

std::string result(const std::string& op, const std::string& params, const std::string& backend, double median_s,
                   const std::string& extra) {
  const std::string problem = op + ":bf16:4x8x64" + (params.empty() ? "" : ":" + params);
  return R"({"case_id": ")" + problem + "@" + backend + R"(:0", "op": ")" + op +
         R"(", "dtype": "bf16", "shape": "4x8x64", "params": ")" + params + R"(", "backend": ")" + backend +
         R"(", "variant": "", "device": "cuda:0", "device_name": "GPU", "status": "ok", "median_s": )" +
         std::to_string(median_s) + R"(, "bytes": 0, "flops": 0)" + extra + "}";
}

std::string bench_file(const std::string& results) {
  return R"({"schema_version": 1, "kind": "bench", "devices": {}, "results": [)" + results + "]}";
}

const std::string kBlock = "llama_block:bf16:4x8x64:eps=1e-5,heads=4@cuda:0";

ReportModel block_model() {
  ReportModel model;
  const std::string ours =
      result("llama_block", "eps=1e-5,heads=4", "cuda", 2e-3, R"(, "family": "blocks", "tokens": 32)") + "," +
      result("add", "", "cuda", 1e-4, R"(, "family": "1", "block": ")" + kBlock + R"(", "nodes": ["residual_1", "residual_2"])") +
      "," + result("linear", "", "cuda", 5e-4, R"(, "family": "2", "block": ")" + kBlock + R"(", "nodes": ["o_proj"])");
  EXPECT_TRUE(add_report_text(model, bench_file(ours), "ours.json").is_ok());
  // torch's script writes its params in its own order and number form.
  const std::string torch =
      result("llama_block", "heads=4,eps=1e-05", "torch-eager", 4e-3, R"(, "family": "blocks", "tokens": 32)") + "," +
      result("llama_block", "heads=4,eps=1e-05", "torch-compile", 3e-3, R"(, "family": "blocks", "tokens": 32)");
  EXPECT_TRUE(add_report_text(model, bench_file(torch), "torch.json").is_ok());
  return model;
}

TEST(ReportBlocks, TorchMeetsOursAndNodesSum) {
  const ReportModel model = block_model();
  const auto tables = block_tables(model);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].ours.size(), 1u);
  EXPECT_EQ(tables[0].torch.size(), 2u);
  ASSERT_EQ(tables[0].nodes.size(), 1u);
  // The add counts for both residuals: 2 x 0.1 ms + 0.5 ms.
  EXPECT_NEAR(nodes_sum_s(model, tables[0].nodes.begin()->second), 7e-4, 1e-12);
  const std::string md = blocks_markdown(model);
  EXPECT_NE(md.find("| 2.00× | 1.50× | 700 µs |"), std::string::npos) << md;
  EXPECT_NE(md.find("residual\\_1, residual\\_2"), std::string::npos) << md;
  EXPECT_NE(markdown_summary(model).find("### Blocks"), std::string::npos);
  EXPECT_NE(html_page(model).find("<section id=\"blocks\">"), std::string::npos);
}

TEST(ReportBlocks, NoBlockNoSection) {
  ReportModel model;
  ASSERT_TRUE(add_report_text(model, bench_file(result("add", "", "cuda", 1e-4, "")), "a.json").is_ok());
  EXPECT_TRUE(blocks_markdown(model).empty());
  EXPECT_EQ(html_page(model).find("<section id=\"blocks\">"), std::string::npos);
}

TEST(ReportBlocks, MalformedBlockKeysAreBadInput) {
  ReportModel model;
  auto status = add_report_text(model, bench_file(result("add", "", "cuda", 1e-4, R"(, "block": ")" + kBlock + R"(")")), "n.json");
  EXPECT_EQ(status.code, StatusCode::bad_input);
  EXPECT_NE(status.message.find("n.json: results[0].nodes"), std::string::npos) << status.message;
  status = add_report_text(model, bench_file(result("add", "", "cuda", 1e-4, R"(, "tokens": "many")")), "t.json");
  EXPECT_EQ(status.code, StatusCode::bad_input);
  EXPECT_NE(status.message.find("results[0].tokens"), std::string::npos) << status.message;
  status = add_report_text(model, bench_file(result("add", "", "cuda", 1e-4, R"(, "nodes": [3])")), "l.json");
  EXPECT_EQ(status.code, StatusCode::bad_input);
  EXPECT_NE(status.message.find("results[0].nodes[0]"), std::string::npos) << status.message;
}

}  // namespace
}  // namespace dnnb::report
