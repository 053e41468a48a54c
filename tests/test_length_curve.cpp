// length-curve: known answers on tiny-llama. Identical arms are exactly zero at every length;
// arms that differ only in ubatch are one batch of the same kernels up to the ubatch, so
// exactly zero there; a q8_0 K cache moves every length.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/arm_settings.h"
#include "serve/catalog.h"
#include "serve/public_paths.h"
#include "serve/sandbox.h"
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
  // Every setting of the table, both arms; a server setting only where it is not its default
  // (a plain arm's document reads as before them: docs/server.md).
  hd::engine::for_each_arm_field([&](const auto& field) {
    if (field.info.server) {
      EXPECT_FALSE(q8["a"].contains(field.info.key) || q8["b"].contains(field.info.key)) << field.info.key;
    } else {
      EXPECT_TRUE(q8["a"].contains(field.info.key) && q8["b"].contains(field.info.key)) << field.info.key;
    }
  });
}

TEST_F(Curve, BadLengthsAreOneLine) {
  EXPECT_NE(curve({"--lengths", "64,32"}, 2)["err"].get<std::string>().find("increasing"),
            std::string::npos);
  EXPECT_NE(curve({"--lengths", "100000"}, 2)["err"].get<std::string>().find("fewer than"),
            std::string::npos);
  curve({"--lengths", "0"}, 2);
}

// With -o the curve is an experiment of its own kind: show prints the table the command prints
// without -o, --json holds the same rows, verify re-measures every length bitwise, a cut file
// resumes to the same rows, an edited row is refused, and serve lists it.
TEST_F(Curve, StoredCurveShowsVerifiesResumesAndIsListed) {
  namespace fs = std::filesystem;
  const std::string file = *dir_ + "/c.hdy";
  const std::vector<std::string> args = {"length-curve", "--a",     *dir_ + "/m.gguf", "-f",
                                         *dir_ + "/t.txt", "--lengths", "8,40,100", "--b-ctk",
                                         "q8_0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto printed = hd::test::run_cli(args);
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  ASSERT_EQ(hd::test::run_cli(with({"-o", file})).exit_code, 0);
  hd::test::expect_refused(with({"-o", file, "--format", "json"}), "--format is for a curve");
  const auto shown = hd::test::run_cli({"show", file});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out, printed.out);
  EXPECT_NE(shown.out.find("B: A's, but cache_type_k \"q8_0\" (A: \"f16\")"), std::string::npos)
      << shown.out;
  const json stored = json::parse(hd::test::run_cli({"show", file, "--json"}).out);
  EXPECT_EQ(stored["kind"], "length-curve");
  EXPECT_EQ(stored["length-curve"]["rows"], curve({"--lengths", "8,40,100", "--b-ctk", "q8_0"})["rows"]);
  const auto verified = hd::test::run_cli({"verify", file});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find("all 3 lengths reproduce bitwise"), std::string::npos);

  const std::string reopen = "DELETE FROM meta WHERE key IN ('integrity_sha256', 'length-curve');"
                             " UPDATE meta SET value = 'running' WHERE key = 'status'";
  const std::string cut = *dir_ + "/cut.hdy", edited = *dir_ + "/edited.hdy";
  fs::copy_file(file, cut, fs::copy_options::overwrite_existing);
  hd::test::sql(cut, "DELETE FROM length_curve_rows WHERE length = 100; " + reopen);
  const auto resumed = hd::test::run_cli({"length-curve", "--resume", cut});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(json::parse(hd::test::run_cli({"show", cut, "--json"}).out)["length-curve"],
            stored["length-curve"]);
  EXPECT_EQ(hd::test::run_cli({"verify", cut}).exit_code, 0);
  fs::copy_file(file, edited, fs::copy_options::overwrite_existing);
  hd::test::sql(edited, "UPDATE length_curve_rows SET mean_kl = 0 WHERE length = 8; DELETE FROM "
                        "length_curve_rows WHERE length = 100; " + reopen);
  hd::test::expect_refused({"length-curve", "--resume", edited}, "the row of length 8 was changed");
  hd::test::sql(edited, "UPDATE length_curve_rows SET mean_kl = -1 WHERE length = 8");
  hd::test::expect_refused({"length-curve", "--resume", edited}, "is damaged: length_curve_rows");

  const json list = hd::serve::list_experiments(hd::serve::Sandbox(*dir_),
                                                hd::serve::PublicPaths(*dir_, *dir_));
  bool listed = false;
  for (const auto& entry : list) {
    if (entry["name"] != "c") continue;
    listed = true;
    EXPECT_EQ(entry["kind"], "length-curve");
    EXPECT_EQ(entry["a"], "m.gguf");
    EXPECT_EQ(entry["status"], "complete");
  }
  EXPECT_TRUE(listed) << list.dump();
}
