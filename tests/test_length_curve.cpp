// length-curve: known answers on tiny-llama. Identical arms are exactly zero at every length;
// arms that differ only in ubatch are one batch of the same kernels up to the ubatch, so
// exactly zero there; a q8_0 K cache moves every length.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/arm_settings.h"
#include "test_support.h"

using nlohmann::json;

namespace {

struct Curve : testing::Test {
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("length-curve"));
    ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o",
                                 *dir_ + "/m.gguf"})
                  .exit_code,
              0);
    std::string text;
    for (int i = 0; i < 40; ++i) text += "Line " + std::to_string(i) + " of a plain text, then. ";
    hd::test::write_file(*dir_ + "/t.txt", text);
  }
  static json curve(std::vector<std::string> extra, int want_exit = 0) {
    std::vector<std::string> args = {"length-curve", "--a", *dir_ + "/m.gguf", "-f",
                                     *dir_ + "/t.txt", "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = hd::test::run_cli(args);
    EXPECT_EQ(r.exit_code, want_exit) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json{{"err", r.err}};
  }
  static std::string* dir_;
};
std::string* Curve::dir_ = nullptr;

}  // namespace

TEST_F(Curve, IdenticalArmsAreZeroEverywhere) {
  const json r = curve({"--lengths", "8,40,100"});
  ASSERT_EQ(r["rows"].size(), 3u);
  for (const auto& row : r["rows"]) {
    EXPECT_EQ(row["rel_err"].get<double>(), 0.0);
    EXPECT_EQ(row["mean_kl"].get<double>(), 0.0);
    EXPECT_EQ(row["top1_flips"].get<int>(), 0);
  }
  EXPECT_EQ(r["rows"][2]["length"], 100);
}

TEST_F(Curve, UbatchOnlyMattersPastItsLength) {
  const json r = curve({"--lengths", "8,32", "--b-ub", "32"});
  for (const auto& row : r["rows"]) EXPECT_EQ(row["rel_err"].get<double>(), 0.0) << row;
  const json q8 = curve({"--lengths", "8,32,100", "--b-ctk", "q8_0"});
  for (const auto& row : q8["rows"]) {
    EXPECT_GT(row["rel_err"].get<double>(), 0.0) << row;
    EXPECT_GT(row["mean_kl"].get<double>(), 0.0) << row;
    EXPECT_GE(row["max_kl"].get<double>(), row["mean_kl"].get<double>());
  }
  EXPECT_EQ(q8["b"]["cache_type_k"], "q8_0");
  EXPECT_EQ(q8["a"]["cache_type_k"], "f16");
  for (const auto& key : hd::engine::arm_field_keys()) {  // every setting of the table, both arms
    EXPECT_TRUE(q8["a"].contains(key) && q8["b"].contains(key)) << key;
  }
}

TEST_F(Curve, BadLengthsAreOneLine) {
  EXPECT_NE(curve({"--lengths", "64,32"}, 2)["err"].get<std::string>().find("increasing"),
            std::string::npos);
  EXPECT_NE(curve({"--lengths", "100000"}, 2)["err"].get<std::string>().find("fewer than"),
            std::string::npos);
  curve({"--lengths", "0"}, 2);
}
