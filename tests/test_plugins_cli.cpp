// A plug-in analysis through the whole tool: diff --analysis stores its rows, show and --json
// print its table, verify recomputes it bitwise, and its numbers agree with the diff's own.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "test_support.h"

using namespace hd::test;

static int analysis_tables(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return -1;
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'analysis_%'", -1, &q,
                     nullptr);
  const int n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return n;
}

TEST(Plugins, ConfidenceThroughDiffShowAndVerify) {
  HD_REQUIRE_SHARED();
  const std::string out = make_experiment(temp_dir("plugins-cli") + "/confidence.hdy",
                                          {"--analysis", "confidence", "--force"});
  EXPECT_EQ(analysis_tables(out), 1);
  const CliResult show = run_cli({"show", out});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("KL by A's confidence"), std::string::npos) << show.out;

  const CliResult js = run_cli({"show", out, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  const auto& t = j.at("analyses").at("confidence");
  ASSERT_EQ(t.at("rows").size(), 6u);
  // Known answers from the diff itself: the buckets partition the scored positions, and their
  // position-weighted mean KL and top-1 change are the run's.
  double n = 0, kl = 0, flips = 0, kl_share = 0;
  for (const auto& r : t.at("rows")) {
    const double k = r.at(1).get<double>();
    n += k;
    if (k > 0) {
      kl += k * r.at(4).get<double>(), flips += k * r.at(6).at("rate").get<double>();
      // A rate in JSON: inside [0, 1] with its interval, or null with the reason.
      const auto& rate = r.at(6);
      if (rate.at("lo").is_null()) {
        EXPECT_TRUE(rate.at("why").is_string()) << rate;
      } else {
        EXPECT_GE(rate.at("lo").get<double>(), 0.0) << rate;
        EXPECT_LE(rate.at("hi").get<double>(), 1.0) << rate;
      }
      kl_share += r.at(3).get<double>();
    }
  }
  EXPECT_NEAR(kl_share, 1.0, 1e-12);  // the buckets' shares of the KL add up to all of it
  EXPECT_EQ(n, j.at("n_scored").get<double>());
  EXPECT_NEAR(kl / n, j.at("kl_mean").get<double>(), 1e-12 * j.at("kl_mean").get<double>());
  EXPECT_NEAR(flips / n, j.at("top1_change_rate").get<double>(), 1e-12);
  // The run's floor column names the floor it took, here B's or A's, never a blank.
  for (const auto& r : t.at("rows")) {
    if (r.at(1).get<double>() == 0) continue;
    const std::string of = r.at(8).get<std::string>();
    EXPECT_TRUE(of == "A vs A′" || of == "B vs B′") << r;
  }
  EXPECT_TRUE(j.at("top1_change").is_object());

  const CliResult v = run_cli({"verify", out});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

TEST(Plugins, RunWithoutAnalysisStoresNone) {
  HD_REQUIRE_SHARED();
  const std::string out = make_experiment(temp_dir("plugins-cli") + "/plain.hdy", {"--force"});
  EXPECT_EQ(analysis_tables(out), 0);
  const CliResult js = run_cli({"show", out, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_FALSE(j.contains("analyses"));
  EXPECT_FALSE(j.at("config").contains("analyses"));  // the configuration reads as before
}

// A dense model routes nothing: the run says nothing of routing (it used to say "routing: no"
// on every diff), while what the model cannot give otherwise is still said.
TEST(Plugins, ADenseDiffSaysNothingOfRouting) {
  HD_REQUIRE_SHARED();
  const CliResult r = run_cli({"diff", "--a", shared_path("models/stories260K.gguf"), "--b-quant",
                               "Q8_0", "-f", shared_path("corpora/tom-sawyer.txt"), "--chunk",
                               "64", "--max-chunks", "1", "-o",
                               temp_dir("plugins-cli") + "/dense.hdy", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("routing"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote "), std::string::npos) << r.err;
}

TEST(Plugins, UnknownOrRepeatedAnalysisIsRefused) {
  HD_REQUIRE_SHARED();
  const std::string dir = temp_dir("plugins-cli");
  const std::vector<std::string> base = {"diff",
                                         "--a",
                                         shared_path("models/stories260K.gguf"),
                                         "--b-quant",
                                         "Q8_0",
                                         "-f",
                                         shared_path("corpora/tom-sawyer.txt"),
                                         "-o",
                                         dir + "/refused.hdy"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_refused(with({"--analysis", "tuned_lens"}), "is not an analysis (there are: confidence");
  expect_refused(with({"--analysis", "confidence,confidence"}), "is given twice");
}
