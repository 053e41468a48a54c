// A model's points as the survey finds and proves them (engine/point_survey.h), and what a run
// does with what it did not find: one line, recorded, or exit 2 when the flag asked for it.
#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/fixtures.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "engine/point_cache.h"
#include "errors.h"
#include "test_support.h"

using namespace hd;

namespace {

engine::PointMap survey(const std::string& path) {
  return engine::survey_points(engine::model_load(path));
}

std::string fixture(const std::string& arch, bool moe = false) {
  return engine::ensure_fixture(arch, moe, 1);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// 16 ids for the fixtures (vocabulary 128, no tokenizer).
std::string ids_file() {
  static const std::string path = [] {
    const std::string p = test::temp_dir("points") + "/ids.txt";
    std::ofstream(p) << "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32\n";
    return p;
  }();
  return path;
}

const std::string& run_file() {
  static const std::string path = test::temp_dir("points-diff") + "/run.hdy";
  return path;
}

test::CliResult diff(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> a = {"diff", "--a", model, "--b", model, "--b-ctk", "q8_0", "--tokens", ids_file(),
                                "--chunk", "16", "--threads", "2", "-o", run_file(), "--force"};
  a.insert(a.end(), extra.begin(), extra.end());
  return test::run_cli(a);
}

}  // namespace

TEST(Points, LlamaHasEveryPointUnderItsOwnName) {
  HD_REQUIRE_SHARED();
  const auto m = survey(test::shared_path("models/stories260K.gguf"));
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(m.embedding, "embd");
  ASSERT_EQ(m.n_layer, 5);
  for (int l = 0; l < 5; ++l) {
    const std::string n = std::to_string(l);
    EXPECT_EQ(m.residual[l], "l_out-" + n);
    EXPECT_EQ(m.mid[l], "ffn_inp-" + n);
    EXPECT_EQ(m.per_head[l], "kqv_out-" + n);
    EXPECT_EQ(m.attn_out[l], "attn_out-" + n);
    EXPECT_EQ(m.mlp_out[l], "ffn_out-" + n);
  }
  EXPECT_TRUE(m.row_rule_exceptions.empty());
  EXPECT_TRUE(m.floor() && m.residuals() && m.transplants() && m.components() && m.has_per_head());
  // As stored in a run's provenance, and read back the same.
  EXPECT_EQ(engine::to_json(engine::point_map_from_json(engine::to_json(m))), engine::to_json(m));
  EXPECT_THROW(engine::point_map_from_json({{"architecture", "llama"}}), RuntimeError);
}

// A name is not proof: jamba names its mixer's output ffn_inp-N, and the swap test says so.
TEST(Points, SwapTestRefusesAPointThatDoesNotCarryTheWholeState) {
  const auto jamba = survey(fixture("jamba"));
  EXPECT_TRUE(jamba.transplants()) << jamba.no_transplants;
  EXPECT_FALSE(jamba.components());
  EXPECT_TRUE(contains(jamba.no_components, "ffn_inp-0 fails the swap test")) << jamba.no_components;
  // qwen4exp's layers read per-layer token embeddings: its embedding point is not the whole input.
  const auto q4 = survey(fixture("qwen4exp", true));
  EXPECT_TRUE(q4.residuals());
  EXPECT_FALSE(q4.transplants());
  EXPECT_TRUE(contains(q4.no_transplants, "embedding")) << q4.no_transplants;
}

// Exceptions the graph itself shows: other names, other rows, 3-D residuals, no mid-layer point.
TEST(Points, OtherNamesRowsAndShapesAreFoundNotListed) {
  const auto gemma2 = survey(fixture("gemma2"));
  EXPECT_EQ(gemma2.mid[0], "sa_out-0");
  EXPECT_TRUE(gemma2.components());
  // gpt-oss keeps every row in its last layer where most models keep the outputs only.
  const auto oss = survey(fixture("gpt-oss", true));
  EXPECT_NE(std::find(oss.row_rule_exceptions.begin(), oss.row_rule_exceptions.end(), "l_out-1"),
            oss.row_rule_exceptions.end());
  EXPECT_TRUE(oss.components()) << oss.no_components;
  EXPECT_EQ(oss.router[1], "ffn_moe_probs-1");
  // deepseek4's residual is [n_embd, 4 streams, tokens] under l_last-N.
  const auto ds4 = engine::model_load(fixture("deepseek4", true));
  const auto m = engine::survey_points(ds4);
  EXPECT_EQ(m.residual[0], "l_last-0");
  EXPECT_EQ(m.residual_width, 4 * ds4->info().n_embd);
  EXPECT_TRUE(m.transplants()) << m.no_transplants;
  // phi3 fuses attention and MLP into one residual add: no mid-layer point, said so.
  const auto phi3 = survey(fixture("phi3"));
  EXPECT_TRUE(phi3.transplants());
  EXPECT_TRUE(contains(phi3.no_components, "phi3 has no mid-layer")) << phi3.no_components;
  // mamba has no attention.
  EXPECT_TRUE(contains(survey(fixture("mamba")).no_per_head, "no per-head"));
}

// What a model does not allow is one line and stored; asked for by a flag, it is exit 2.
TEST(Points, RunsDegradeWithTheReasonAndRefuseWhatWasAskedFor) {
  const std::string phi3 = fixture("phi3");
  auto r = diff(phi3, {"--transplants"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "components: no (phi3 has no mid-layer")) << r.err;
  const auto show = test::run_cli({"export", run_file(), "--table", "transplants"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_TRUE(contains(show.out, "l_out-1")) << show.out;
  r = diff(phi3, {"--components"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--components: phi3 has no mid-layer")) << r.err;
  EXPECT_TRUE(contains(r.err, "heterodyne points --model")) << r.err;
  // talkie's l_out-0 fails the swap test: no residuals, so --save-residuals is refused.
  r = diff(fixture("talkie"), {"--save-residuals"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--save-residuals: talkie has no residual point")) << r.err;
  // dream keeps no KV cache: no floor (one line), and a smaller ubatch is refused, not an abort.
  r = diff(fixture("dream"), {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "floor: no (dream keeps no KV cache")) << r.err;
  r = diff(fixture("dream"), {"--ub", "7", "--no-floor"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "keeps no KV cache")) << r.err;
}

TEST(Points, CommandPrintsTheMapAndItsNodes) {
  const std::string jamba = fixture("jamba");
  auto r = test::run_cli({"points", "--model", jamba});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "residual: l_out on layers 0, 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "components: no (jamba"));
  r = test::run_cli({"points", "--model", jamba, "--json", "--nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "jamba");
  EXPECT_GT(j["nodes"].size(), 20u);
  EXPECT_EQ(test::run_cli({"points"}).exit_code, 2);
  EXPECT_EQ(test::run_cli({"points", "--model", "/nonexistent.gguf"}).exit_code, 2);
}

// deepseek4's residual is 3-D ([n_embd, 4 streams, tokens]): a decode step shows it one row at a
// time, [n_embd, 4, 1], which reads as one row of the width the prompt gave it.
TEST(Points, DecodeStepsOfAThreeDimensionalResidualAreOneRowEach) {
  const std::string dir = test::temp_dir("points-3d");
  const auto r = test::run_cli({"capture", "--model", fixture("deepseek4", true), "--tokens",
                                ids_file(), "--max-tokens", "8", "--decode", "2", "--threads", "2",
                                "-o", dir + "/ref"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir + "/ref/manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  bool seen = false;
  for (const auto& t : manifest["taps"]) {
    if (t["name"] != "l_out-0@token_1") continue;
    seen = true;
    EXPECT_EQ(t["graph_name"], "l_last-0");
    EXPECT_EQ(t["shape"][0], 1);
    EXPECT_EQ(t["shape"][1], 4 * engine::model_load(fixture("deepseek4", true))->info().n_embd);
  }
  EXPECT_TRUE(seen) << manifest["taps"].dump();
}

// The gate on a model without attention: capture, calibrate and check run on its residuals;
// --per-head is one line (exit 2), not an empty verdict.
TEST(Points, GatePerHeadOnAModelWithoutAttentionIsOneLine) {
  const std::string mamba = fixture("mamba");
  const std::string ref = test::temp_dir("points-gate") + "/ref";
  auto r = test::run_cli({"capture", "--model", mamba, "--tokens", ids_file(), "--max-tokens", "16",
                          "--threads", "2", "-o", ref});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(test::run_cli({"calibrate", "--reference", ref}).exit_code, 0);
  r = test::run_cli({"check", "--reference", ref, "--model", mamba, "--threads", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = test::run_cli({"check", "--reference", ref, "--model", mamba, "--threads", "2", "--per-head"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--per-head:") && contains(r.err, "no per-head attention tap")) << r.err;
}

// A survey is kept for the same file, build and CPU (engine/point_cache.h) and gives the same map
// from the cache; a damaged cache file is surveyed again and replaced; asking for the nodes
// always surveys.
TEST(Points, ASurveyIsKeptForTheSameFileAndADamagedOneIsMadeAgain) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("point-cache");
  test::ScopedCacheDir cache(dir);
  const std::string model = test::shared_path("models/stories260K.gguf");
  EXPECT_FALSE(engine::kept_survey(engine::survey_slot(model)).has_value());
  const auto first = survey(model);
  const auto kept = engine::kept_survey(engine::survey_slot(model));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(engine::to_json(*kept), engine::to_json(first));
  EXPECT_EQ(engine::to_json(survey(model)), engine::to_json(first));
  const auto files = std::distance(std::filesystem::directory_iterator(dir + "/points"),
                                   std::filesystem::directory_iterator());
  EXPECT_EQ(files, 1);
  for (const auto& f : std::filesystem::directory_iterator(dir + "/points")) {
    std::ofstream(f.path()) << "{\"architecture\": ";  // cut short
  }
  EXPECT_FALSE(engine::kept_survey(engine::survey_slot(model)).has_value());
  EXPECT_EQ(engine::to_json(survey(model)), engine::to_json(first));
  EXPECT_TRUE(engine::kept_survey(engine::survey_slot(model)).has_value());
  std::vector<engine::Hook::Node> nodes;
  engine::survey_points(engine::model_load(model), &nodes);
  EXPECT_FALSE(nodes.empty());
}
