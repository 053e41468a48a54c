// quant-risk on a stored reference: the command reports, for every prompt tap, exactly what
// the analysis computes on the tensor as stored.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/quant_risk.h"
#include "store/safetensors.h"
#include "test_support.h"

using nlohmann::json;

TEST(QuantRiskCommand, ReportsEveryPromptTapAsTheAnalysisComputesIt) {
  const std::string dir = hd::test::temp_dir("quant-risk-cli");
  ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o",
                               dir + "/m.gguf"})
                .exit_code,
            0);
  hd::test::write_file(dir + "/g.txt", "A golden text of modest length, for the risk of int4.");
  ASSERT_EQ(hd::test::run_cli({"capture", "-m", dir + "/m.gguf", "-f", dir + "/g.txt",
                               "--decode", "2", "-o", dir + "/ref"})
                .exit_code,
            0);
  const auto file = hd::store::read_safetensors(dir + "/ref/activations.safetensors");
  for (int bits : {8, 4}) {
    const auto r = hd::test::run_cli(
        {"quant-risk", "--reference", dir + "/ref", "--bits", std::to_string(bits), "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["bits"], bits);
    ASSERT_EQ(j["taps"].size(), 1u + 4 * 4 + 1);  // decode steps (one row each) left out
    size_t k = 0;
    for (const auto& t : file.tensors) {
      if (t.name.find('@') != std::string::npos) continue;
      const auto& row = j["taps"][k++];
      EXPECT_EQ(row["name"], t.name);
      const auto q = hd::analysis::quant_risk(t.data, t.shape[1], bits);
      EXPECT_EQ(row["error_per_tensor"].get<double>(), q.error_per_tensor) << t.name;
      EXPECT_EQ(row["error_per_channel"].get<double>(), q.error_per_channel) << t.name;
      EXPECT_EQ(row["abs_max"].get<double>(), q.abs_max) << t.name;
    }
  }
  const auto human = hd::test::run_cli({"quant-risk", "--reference", dir + "/ref", "--bits", "4"});
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.out.find("int4 round-to-nearest"), std::string::npos) << human.out;
  EXPECT_EQ(hd::test::run_cli({"quant-risk", "--reference", dir + "/ref", "--bits", "5"}).exit_code, 2);
  EXPECT_EQ(hd::test::run_cli({"quant-risk", "--reference", dir + "/none", "--bits", "8"}).exit_code,
            2);
}
