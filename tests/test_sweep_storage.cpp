// A sweep's rows in tables (sweep_positions, sweep_flips), and files written before them, whose
// rows are JSON in meta: such a file still shows, verifies and resumes with the same summary,
// bit for bit, and a resume adds its missing chunks as table rows. The old layout is made here
// from a new file by the old writer, kept only in this test.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "kinds/sweep/sweep_summary.h"
#include "store/experiment.h"
#include "test_support.h"

using nlohmann::json;
namespace fs = std::filesystem;

using hd::test::sql;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("sweep-storage");
  return d;
}

// A sweep with a floor and a combination that cannot run (B's V type without flash attention).
const std::string& new_sweep() {
  static const std::string out = [] {
    const std::string p = dir() + "/new.hdy";
    EXPECT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o",
                                 dir() + "/m.gguf", "--force"})
                  .exit_code,
              0);
    const auto r = hd::test::run_cli({"sweep",
                                      "--a",
                                      dir() + "/m.gguf",
                                      "--b-ctv",
                                      "q8_0",
                                      "--a-fa",
                                      "off",
                                      "--b-fa",
                                      "on",
                                      "-f",
                                      hd::test::shared_path("corpora/tom-sawyer.txt"),
                                      "--chunk",
                                      "32",
                                      "--max-chunks",
                                      "3",
                                      "--score-from",
                                      "half",
                                      "-o",
                                      p,
                                      "--force"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return out;
}

// The JSON row the writer before the tables stored for one chunk, built as it built it.
std::string old_row(const hd::store::SweepChunkRows& r) {
  const auto arm = [](const hd::store::SweepArmRows& a) {
    return json{{"kl", a.kl}, {"nll", a.nll}, {"flips", a.flips}};
  };
  json combos = json::array();
  for (size_t m = 1; m <= r.combos.size(); ++m) {
    json row = r.combos[m - 1] ? arm(*r.combos[m - 1]) : json::object();
    row["mask"] = m;
    combos.push_back(row);
  }
  json out = {{"chunk", r.chunk}, {"nll_a", r.nll_a}, {"combos", combos}};
  if (r.floor) out["floor"] = arm(*r.floor);
  return out.dump();
}

// `path` rewritten in the layout of files before the tables: each chunk one meta row hashed
// with the configuration, no sweep tables; sealed again.
// An older sweep: rows in meta, no floor of B (its provenance has no floor_ubatch_b), and the
// summary its rows give.
void to_old_layout(const std::string& path) {
  std::string statements, config;
  const auto quoted = [](const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("''") : std::string(1, ch);
    return q + "'";
  };
  {
    const auto e = hd::store::Experiment::open(path, false);
    config = e.required_meta("config");
    const json combos = json::parse(e.required_meta("sweep_combinations"));
    hd::store::SweepShape shape{16, 15, {}, true, true};  // chunk 32 from its half: 16…30
    for (const auto& c : combos) shape.possible.push_back(c["possible"].get<bool>());
    std::vector<hd::store::SweepChunkRows> rows;
    for (int c = 0; c < 3; ++c) {
      rows.push_back(e.sweep_chunk(c, shape).value());
      rows.back().floor_b.reset();
      const std::string row = old_row(rows.back());
      statements += "INSERT INTO meta VALUES ('sweep_chunk_" + std::to_string(c) + "', " +
                    quoted(row) + "), ('sweep_chunk_sha256/" + std::to_string(c) + "', '" +
                    hd::sha256_bytes(config + "\n" + row) + "');";
    }
    const json summary = hd::run::sweep_summary(json::parse(config), rows, combos);
    statements += "UPDATE meta SET value = " + quoted(summary.dump()) + " WHERE key = 'sweep';";
    statements += "UPDATE meta SET value = json_remove(value, '$.floor_ubatch_b') WHERE key = "
                  "'provenance';";
  }
  sql(path, statements +
                "DROP TABLE sweep_positions; DROP TABLE sweep_flips;"
                "DELETE FROM meta WHERE key LIKE 'sweep_rows_sha256/%';");
  hd::store::Experiment::open(path, true).seal();
}

json shown(const std::string& path) {
  const auto r = hd::test::run_cli({"show", path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

}  // namespace

TEST(SweepStorage, RowsAreTablesAPandasUserReads) {
  HD_REQUIRE_SHARED();
  const std::string& p = new_sweep();
  // Every scored position (16…30) of every chunk for A (mask 0), the combinations that ran (1
  // cannot) and both floors (A's and B's, each against its own arm); A's KL against itself is 0.
  EXPECT_EQ(hd::test::rows_text(p,
                                "SELECT comparison, mask, count(*), min(pos), max(pos) FROM "
                                "sweep_positions GROUP BY 1, 2 ORDER BY 1, 2"),
            "combination|0|45|16|30|\ncombination|2|45|16|30|\ncombination|3|45|16|30|\n"
            "floor|0|45|16|30|\nfloor_b|0|45|16|30|\n");
  EXPECT_EQ(hd::test::rows_text(p,
                                "SELECT max(kl) FROM sweep_positions WHERE mask = 0 AND "
                                "comparison = 'combination'"),
            "R0|\n");
  EXPECT_EQ(hd::test::rows_text(p, "SELECT count(*) FROM sweep_flips"), "15|\n");
  // The summary's mean KL of B is the mean of its rows.
  const json s = shown(p)["sweep"];
  const std::string mean = hd::test::rows_text(
      p, "SELECT avg(kl) FROM sweep_positions WHERE comparison = 'combination' AND mask = 3");
  const uint64_t bits = std::stoull(mean.substr(1, mean.find('|') - 1));
  double avg;
  std::memcpy(&avg, &bits, sizeof avg);
  const double total = s["total"].get<double>();
  EXPECT_GT(total, 0.0);
  EXPECT_NEAR(avg, total, 1e-12 * total);
  // The integrity hash as docs/experiment-format.md defines it, computed without our code.
  const std::string py = dir() + "/read.json";
  const std::string cmd = "python3 " + std::string(HD_SOURCE_DIR) +
                          "/tests/python/read_experiment.py " + p + " > " + py;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(py);
  const json j = json::parse(in);
  EXPECT_EQ(j["integrity_recomputed"], j["integrity_stored"]);
}

TEST(SweepStorage, AFileWithRowsInMetaStillShowsVerifiesAndResumes) {
  HD_REQUIRE_SHARED();
  const std::string old = dir() + "/old.hdy";
  fs::copy_file(new_sweep(), old, fs::copy_options::overwrite_existing);
  to_old_layout(old);
  ASSERT_EQ(hd::test::rows_text(old, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sweep%'"),
            "0|\n");
  const json before = shown(new_sweep()), after = shown(old);
  // The same figures, less B's floor (which the older file has not).
  EXPECT_EQ(after["sweep"]["shapley"].dump(), before["sweep"]["shapley"].dump());
  EXPECT_EQ(after["sweep"]["floor"]["floor_a"].dump(), before["sweep"]["floor"]["floor_a"].dump());
  EXPECT_TRUE(after["sweep"]["floor"]["floor_b"].is_null());
  EXPECT_EQ(after["integrity"], "ok");
  const auto v = hd::test::run_cli({"verify", old});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("reproduce bitwise"), std::string::npos) << v.err;

  // Killed after two chunks: resumed, its last chunk goes into the tables, the summary is the
  // whole run's byte for byte.
  const std::string cut = dir() + "/old-cut.hdy";
  fs::copy_file(old, cut, fs::copy_options::overwrite_existing);
  sql(cut,
      "DELETE FROM meta WHERE key IN ('sweep_chunk_2', 'sweep_chunk_sha256/2', 'sweep', "
      "'integrity_sha256'); UPDATE meta SET value = 'running' WHERE key = 'status';");
  const std::string tampered = dir() + "/old-tampered.hdy";
  fs::copy_file(cut, tampered, fs::copy_options::overwrite_existing);
  sql(tampered,
      "UPDATE meta SET value = replace(value, '\"chunk\":1', '\"chunk\":1 ') "
      "WHERE key = 'sweep_chunk_1'");
  hd::test::expect_refused({"sweep", "--resume", tampered}, "sweep chunk 1 was changed");
  const auto r = hd::test::run_cli({"sweep", "--resume", cut});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming: 2 of 3 chunks already stored"), std::string::npos) << r.err;
  EXPECT_EQ(shown(cut)["sweep"].dump(), after["sweep"].dump());
  // (An older sweep resumes as it began: without B's floor.)
  const std::string chunk2 =
      "SELECT * FROM sweep_positions WHERE chunk = 2 AND comparison != 'floor_b' ORDER BY 1, 2, 3, 4";
  EXPECT_EQ(hd::test::rows_text(cut, "SELECT count(*) FROM sweep_positions WHERE comparison = "
                                     "'floor_b'"),
            "0|\n");
  EXPECT_EQ(hd::test::rows_text(cut, chunk2), hd::test::rows_text(new_sweep(), chunk2));
  EXPECT_EQ(hd::test::rows_text(cut, "SELECT DISTINCT chunk FROM sweep_positions"), "2|\n");
  EXPECT_EQ(hd::test::run_cli({"verify", cut}).exit_code, 0);
}
