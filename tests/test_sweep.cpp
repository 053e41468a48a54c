// sweep and floor on tiny-llama: known answers. The sweep's B combination is the diff's B, so
// its mean KL is diff's to the bit; Shapley values add up to it; a combination llama.cpp
// cannot run is listed with its reason; identical arms give one combination at exactly 0.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "analysis/invariance.h"
#include "test_support.h"

using nlohmann::json;

using hd::test::sql;

namespace {

struct Sweep : testing::Test {
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("sweep"));
    ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o",
                                 *dir_ + "/m.gguf"})
                  .exit_code,
              0);
    std::string text;
    const char* words[] = {"river", "stone", "light", "quietly", "the", "and", "under", "a",
                           "bridge", "morning", "of", "walked", "green", "old", "window", "rain"};
    for (int i = 0; i < 900; ++i) text += std::string(words[(i * 7 + i / 5) % 16]) + (i % 11 ? " " : ". ");
    hd::test::write_file(*dir_ + "/t.txt", text);
  }
  static std::vector<std::string> base(const std::string& cmd, const std::string& out) {
    return {cmd, "--a", *dir_ + "/m.gguf", "-f", *dir_ + "/t.txt", "--chunk", "64",
            "--max-chunks", "3", "-o", *dir_ + "/" + out, "--force"};
  }
  static json show(const std::string& out) {
    const auto r = hd::test::run_cli({"show", *dir_ + "/" + out, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  static std::string* dir_;
};
std::string* Sweep::dir_ = nullptr;

}  // namespace

TEST_F(Sweep, ArmsThatDifferInNothingRunOneCombinationAtZero) {
  const auto r = hd::test::run_cli(base("sweep", "none.hdy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = show("none.hdy")["sweep"];
  EXPECT_TRUE(s["settings"].empty());
  ASSERT_EQ(s["combinations"].size(), 1u);
  EXPECT_EQ(s["combinations"][0]["kl_mean"].get<double>(), 0.0);
  EXPECT_EQ(s["total"].get<double>(), 0.0);
  EXPECT_TRUE(s["shapley"].empty() && s["main_effects"].empty());
}

TEST_F(Sweep, ShapleyAddsUpToTheDiffsKlOnThreeSettings) {
  auto args = base("sweep", "three.hdy");
  for (const char* a : {"--b-ctk", "q8_0", "--a-fa", "off", "--b-fa", "on", "--b-ub", "16"})
    args.push_back(a);
  const auto r = hd::test::run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = show("three.hdy")["sweep"];
  ASSERT_EQ(s["settings"], json({"cache_type_k", "flash_attn", "n_ubatch"}));
  ASSERT_EQ(s["combinations"].size(), 8u);
  double sum = 0;
  for (const auto& [name, v] : s["shapley"].items()) sum += v.get<double>();
  const double total = s["total"].get<double>();
  EXPECT_GT(total, 0.0);
  EXPECT_NEAR(sum, total, 1e-12 * total);
  EXPECT_EQ(s["combinations"][0]["kl_mean"].get<double>(), 0.0);

  // The all-B combination is diff's arm B: the same mean KL, bit for bit.
  auto d = base("diff", "three-diff.hdy");
  d.insert(d.begin() + 3, {"--b", *dir_ + "/m.gguf"});
  for (const char* a : {"--b-ctk", "q8_0", "--a-fa", "off", "--b-fa", "on", "--b-ub", "16"})
    d.push_back(a);
  ASSERT_EQ(hd::test::run_cli(d).exit_code, 0);
  EXPECT_EQ(show("three-diff.hdy")["kl_mean"].get<double>(), total);

  const auto v = hd::test::run_cli({"verify", *dir_ + "/three.hdy"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("reproduce bitwise"), std::string::npos) << v.out;
}

TEST_F(Sweep, ACombinationThatCannotRunIsListedWithItsReason) {
  auto args = base("sweep", "impossible.hdy");
  for (const char* a : {"--b-ctv", "q8_0", "--a-fa", "off", "--b-fa", "on"}) args.push_back(a);
  const auto r = hd::test::run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = show("impossible.hdy")["sweep"];
  ASSERT_EQ(s["combinations"].size(), 4u);
  const json& bad = s["combinations"][1];  // B's V type with A's flash attention (off)
  EXPECT_EQ(bad["values"]["cache_type_v"], "q8_0");
  EXPECT_EQ(bad["values"]["flash_attn"], "off");
  EXPECT_FALSE(bad["possible"].get<bool>());
  EXPECT_NE(bad["reason"].get<std::string>().find("needs flash attention"), std::string::npos);
  EXPECT_EQ(s["impossible"], 1);
  // The V type cannot move without flash attention: one player, and the values still add up.
  EXPECT_EQ(s["shapley_players"], json({"cache_type_v+flash_attn"}));
  const double total = s["total"].get<double>();  // the mean of chunk means vs the pooled mean
  EXPECT_NEAR(s["shapley"]["cache_type_v+flash_attn"].get<double>(), total, 1e-12 * total);
  // The one pair that ran (a mean over chunks of chunk means: equal to the pooled means' difference
  // up to rounding, chunks being of one length).
  const double pair = s["combinations"][3]["kl_mean"].get<double>() -
                      s["combinations"][2]["kl_mean"].get<double>();
  EXPECT_NEAR(s["main_effects"]["cache_type_v"].get<double>(), pair, 1e-12 * std::fabs(pair));
  const auto human = hd::test::run_cli({"show", *dir_ + "/impossible.hdy"});
  EXPECT_NE(human.out.find("cannot run: a quantized V cache"), std::string::npos) << human.out;

  auto many = base("sweep", "many.hdy");
  for (const char* a : {"--b-ctk", "q8_0", "--b-ub", "16", "--max-arms", "2"}) many.push_back(a);
  const auto refused = hd::test::run_cli(many);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--max-arms 2"), std::string::npos) << refused.err;
}

TEST_F(Sweep, FloorFindsIdenticalRunsAndSaysWhatTheDataShow) {
  const auto r = hd::test::run_cli({"floor", "-m", *dir_ + "/m.gguf", "-f", *dir_ + "/t.txt",
                                    "--ub", "1..8,32,64", "--fa", "off,on", "--ref-ub", "64",
                                    "--chunk", "64", "--max-chunks", "2", "-o",
                                    *dir_ + "/floor.hdy", "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json f = show("floor.hdy")["floor"];
  ASSERT_EQ(f["rows"].size(), 2u * 10);
  ASSERT_EQ(f["patterns"].size(), 2u);
  for (size_t g = 0; g < 2; ++g) {
    std::vector<hd::analysis::InvarianceRow> rows;
    for (size_t i = 0; i < 10; ++i) {
      const json& row = f["rows"][g * 10 + i];
      rows.push_back({row["n_ubatch"].get<int>(), row["identical"].get<bool>()});
      if (row["identical"].get<bool>()) {
        EXPECT_EQ(row["kl_mean"].get<double>(), 0.0);
        EXPECT_EQ(row["positions_differing"].get<int>(), 0);
      } else {
        EXPECT_GT(row["positions_differing"].get<int>(), 0);
      }
    }
    // The reference ubatch itself reruns identically: the run is deterministic.
    EXPECT_TRUE(f["rows"][g * 10 + 9]["identical"].get<bool>());
    EXPECT_EQ(f["patterns"][g]["summary"], hd::analysis::invariance_pattern(rows, 64));
  }
  EXPECT_TRUE(f["patterns"][0]["same_as_reference"].get<bool>());  // fa off is the reference
  EXPECT_EQ(hd::test::run_cli({"verify", *dir_ + "/floor.hdy"}).exit_code, 0);
  EXPECT_EQ(hd::test::run_cli({"floor", "-m", *dir_ + "/m.gguf", "-f", *dir_ + "/t.txt", "--ub",
                               "8..1", "-o", *dir_ + "/bad.hdy"})
                .exit_code,
            2);
}

TEST(Invariance, PatternsComeFromTheData) {
  using hd::analysis::invariance_pattern;
  std::vector<hd::analysis::InvarianceRow> rows;
  for (int u = 1; u <= 16; ++u) rows.push_back({u, u % 4 == 0});
  EXPECT_EQ(invariance_pattern(rows, 16), "bitwise identical exactly at multiples of 4");
  for (auto& r : rows) r.identical = r.ubatch >= 2;
  EXPECT_EQ(invariance_pattern(rows, 16), "bitwise identical exactly from ubatch 2 up");
  for (auto& r : rows) r.identical = true;
  EXPECT_EQ(invariance_pattern(rows, 16), "bitwise identical at every ubatch tested");
  for (auto& r : rows) r.identical = false;
  EXPECT_EQ(invariance_pattern(rows, 16), "no ubatch tested is bitwise identical to the reference");
  for (auto& r : rows) r.identical = r.ubatch == 3 || r.ubatch == 9 || r.ubatch == 10 || r.ubatch == 11;
  EXPECT_EQ(invariance_pattern(rows, 16), "bitwise identical at ubatch 3, 9–11 only");
  std::vector<hd::analysis::InvarianceRow> divisors;
  for (int u : {1, 2, 3, 4, 5, 8, 12, 16}) divisors.push_back({u, 24 % u == 0});
  EXPECT_EQ(invariance_pattern(divisors, 24),
            "bitwise identical exactly where the ubatch divides the chunk (equal splits)");
}

namespace {

std::string meta(const std::string& path, const std::string& key) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &q, nullptr);
  sqlite3_bind_text(q, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  std::string v = sqlite3_step(q) == SQLITE_ROW
                      ? reinterpret_cast<const char*>(sqlite3_column_text(q, 0))
                      : "<absent>";
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

}  // namespace

// Provenance records every arm the sweep ran, as a diff records its two: what each ran on.
TEST_F(Sweep, ProvenanceRecordsTheFactsOfEveryArm) {
  auto args = base("sweep", "arms.hdy");
  for (const char* a : {"--b-ub", "16", "--no-floor"}) args.push_back(a);
  args[8] = "1";  // --max-chunks 1
  ASSERT_EQ(hd::test::run_cli(args).exit_code, 0);
  const json arms = json::parse(meta(*dir_ + "/arms.hdy", "provenance"))["arms"];
  ASSERT_EQ(arms["combinations"].size(), 2u);
  EXPECT_EQ(arms["a"], arms["combinations"][0]);
  EXPECT_EQ(arms["b"], arms["combinations"][1]);
  EXPECT_EQ(arms["b"]["n_ubatch"], 16);
  EXPECT_NE(arms["a"]["n_ubatch"], 16);
  EXPECT_EQ(arms["a"]["runs_on"]["process"], "in-process");
  EXPECT_EQ(arms["a"]["model_sha256"].get<std::string>().size(), 64u);
  EXPECT_FALSE(arms.contains("floor"));
}

// A sweep interrupted after its first chunks (the state a killed run leaves: rows of chunks 0
// and 1, no summary, not sealed) is finished by --resume with the rows and summary a whole run
// wrote, bit for bit; a stored row edited since is refused.
TEST_F(Sweep, ResumeFinishesWithTheRowsOfAWholeRun) {
  auto args = base("sweep", "whole.hdy");
  for (const char* a : {"--b-ctk", "q8_0", "--b-ub", "16"}) args.push_back(a);
  ASSERT_EQ(hd::test::run_cli(args).exit_code, 0);
  const std::string whole = *dir_ + "/whole.hdy", cut = *dir_ + "/cut.hdy";
  std::filesystem::copy_file(whole, cut, std::filesystem::copy_options::overwrite_existing);
  sql(cut, "DELETE FROM sweep_positions WHERE chunk = 2; DELETE FROM sweep_flips WHERE chunk = 2;"
           "DELETE FROM meta WHERE key IN ('sweep_rows_sha256/2', 'sweep', 'integrity_sha256');"
           "UPDATE meta SET value = 'running' WHERE key = 'status';");
  const auto shown = hd::test::run_cli({"show", cut});
  EXPECT_NE(shown.err.find("sweep --resume"), std::string::npos) << shown.err;

  const std::string tampered = *dir_ + "/tampered.hdy";
  std::filesystem::copy_file(cut, tampered, std::filesystem::copy_options::overwrite_existing);
  sql(tampered, "UPDATE sweep_positions SET kl = kl + 0.25 WHERE chunk = 1 AND mask = 3 AND pos = 9");
  hd::test::expect_refused({"sweep", "--resume", tampered}, "sweep chunk 1 was changed");

  const auto r = hd::test::run_cli({"sweep", "--resume", cut});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming: 2 of 3 chunks already stored"), std::string::npos) << r.err;
  for (const char* key : {"sweep_rows_sha256/0", "sweep_rows_sha256/2", "sweep"})
    EXPECT_EQ(meta(cut, key), meta(whole, key)) << key;
  for (const char* table : {"sweep_positions", "sweep_flips"}) {
    const std::string all = std::string("SELECT * FROM ") + table + " ORDER BY 1, 2, 3";
    EXPECT_EQ(hd::test::rows_text(cut, all), hd::test::rows_text(whole, all)) << table;
  }
  EXPECT_EQ(meta(cut, "status"), "complete");
  EXPECT_EQ(hd::test::run_cli({"verify", cut}).exit_code, 0);
  hd::test::expect_refused({"sweep", "--resume", cut, "--chunk", "32"},
                           "takes no other flag but -f or --tokens, not --chunk");
}

// Issue 16: `--ub 7,32,64,65,128,129` (129 runs as 128) printed "multiples of 2" where a dense
// run shows multiples of 4. Sparse sizes fit several rules; none of them is claimed.
TEST(Invariance, SparseSizesClaimOnlyARuleTheyTellApartFromTheOthers) {
  using hd::analysis::invariance_pattern;
  using hd::analysis::InvarianceRow;
  auto tested = [](std::vector<int> sizes, const std::function<bool(int)>& truth) {
    std::vector<InvarianceRow> rows;
    for (int u : sizes) rows.push_back({u, truth(u)});
    return rows;
  };
  auto every4 = [](int u) { return u % 4 == 0; };
  EXPECT_EQ(invariance_pattern(tested({7, 32, 64, 65, 128}, every4), 128),
            "bitwise identical at ubatch 32, 64, 128 only, which fits several rules alike "
            "(multiples of 2, 4, 8, 16 or 32; sizes that divide the chunk): other sizes would "
            "tell them apart");
  // The same truth on sizes that do tell the periods apart: 2 and 6 rule out 2, 12 rules out 8
  // and the divisors of the chunk, 5 rules out "from 4 up".
  EXPECT_EQ(invariance_pattern(tested({2, 4, 5, 6, 8, 12}, every4), 128),
            "bitwise identical exactly at multiples of 4");
  // Without a size above 4 that differs, "from 4 up" fits as well as multiples of 4 (2 rules
  // out multiples of 2 and the divisors of the chunk).
  EXPECT_EQ(invariance_pattern(tested({2, 3, 4, 8}, every4), 128),
            "bitwise identical at ubatch 4, 8 only, which fits several rules alike (multiples of "
            "4; every size from 4 up): other sizes would tell them apart");
  // A threshold seen across a gap: the change may lie anywhere in the untested sizes.
  auto from32 = [](int u) { return u >= 32; };
  EXPECT_EQ(invariance_pattern(tested({1, 7, 32, 33, 50}, from32), 64),
            "bitwise identical from ubatch 32 up among the sizes tested, at none below (8–31 "
            "untested: the change may lie there)");
  EXPECT_EQ(invariance_pattern(tested({1, 30, 32, 33, 50}, from32), 64),
            "bitwise identical from ubatch 32 up among the sizes tested, at none below (31 "
            "untested: the change may lie there)");
  EXPECT_EQ(invariance_pattern(tested({1, 31, 32, 33, 50}, from32), 64),
            "bitwise identical exactly from ubatch 32 up");
  // One identical size is no period, however many sizes it is a multiple of.
  EXPECT_EQ(invariance_pattern(tested({3, 5, 16, 20}, [](int u) { return u == 16; }), 64),
            "bitwise identical at ubatch 16 only");
}

// `sweep --b-quant` (issue 16: "The following arguments were not expected") makes B as diff
// does: the one setting that differs is the model, and its KL is diff's to the bit.
TEST_F(Sweep, BQuantMakesBAsDiffDoes) {
  auto args = base("sweep", "quant.hdy");
  args.insert(args.end(), {"--b-quant", "Q8_0"});
  const auto r = hd::test::run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = show("quant.hdy")["sweep"];
  EXPECT_EQ(s["settings"], json({"model"}));
  auto d = base("diff", "quant-diff.hdy");
  d.insert(d.end(), {"--b-quant", "Q8_0"});
  ASSERT_EQ(hd::test::run_cli(d).exit_code, 0);
  EXPECT_EQ(show("quant-diff.hdy")["kl_mean"].get<double>(), s["total"].get<double>());
  EXPECT_GT(s["total"].get<double>(), 0.0);
  EXPECT_EQ(hd::test::run_cli({"verify", *dir_ + "/quant.hdy"}).exit_code, 0);
  auto both = base("sweep", "both.hdy");
  both.insert(both.end(), {"--b", *dir_ + "/m.gguf", "--b-quant", "Q8_0"});
  hd::test::expect_refused(both, "not both");
}
