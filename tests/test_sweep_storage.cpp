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

// Files of the format before version 2 (a sweep's rows as JSON in meta, no kind, no hashes per
// chunk) are not read: every command that opens one says so in one line, naming both versions.
TEST(SweepStorage, AFileOfTheFormatBeforeIsRefusedNamingItsVersion) {
  HD_REQUIRE_SHARED();
  const std::string old = dir() + "/old.hdy";
  fs::copy_file(new_sweep(), old, fs::copy_options::overwrite_existing);
  sql(old, "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  const std::string says =
      "has schema version '1', an older format this heterodyne no longer reads (run it again "
      "with this build) (this build reads version 2)";
  hd::test::expect_refused({"show", old}, says);
  hd::test::expect_refused({"show", old, "--json"}, says);
  hd::test::expect_refused({"verify", old}, says);
  hd::test::expect_refused({"sweep", "--resume", old}, says);
  hd::test::expect_refused({"report", old, "--data", dir() + "/old.json"}, says);
}
