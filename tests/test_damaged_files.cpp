// Every reader bounds-checks what it reads (issue 15, class 3): an experiment whose rows were
// edited to values no run writes — steps and positions out of range, NULL and non-finite
// numbers, malformed top-5 lists, shapes that do not match their data, foreign JSON — is
// either shown (when the edit is harmless) or refused with one line and exit 2. Never a
// crash, never exit 1 "internal error". Each edit is applied to a fresh copy of one real
// experiment with floor, transplants, components and saved residuals, then read by show (every
// view), show --json, export and report.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/experiment.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::run_cli;
using hd::test::shared_path;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("damaged");
  return d;
}

const std::string& original() {
  static const std::string p = [] {
    const std::string out = dir() + "/original.hdy";
    const CliResult r = run_cli({"diff", "--a", shared_path("models/stories260K.gguf"),
                                 "--b-quant", "Q8_0", "-f",
                                 shared_path("corpora/tom-sawyer.txt"), "--chunk", "32",
                                 "--max-chunks", "2", "--components", "--save-residuals", "-o",
                                 out});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }();
  return p;
}

// SQLite's result code for the edit (SQLITE_OK when it was made).
int exec_sql(const std::string& path, const std::string& sql, std::string& error) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return SQLITE_CANTOPEN;
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  if (msg) error = msg;
  sqlite3_free(msg);
  sqlite3_close(db);
  return rc;
}

// The edits: each one value no run writes (or rows no run leaves out).
// Each edit names the one row it changes: a statement that set one key on two rows would break
// the primary key and change nothing.
const std::string kT = "chunk = 0 AND direction = 'denoise' AND step = 1 AND pos = ";
const std::vector<std::string> kEdits = {
    // transplants
    "UPDATE transplants SET step = 0 WHERE " + kT + "20",
    "UPDATE transplants SET step = -1 WHERE " + kT + "21",
    "UPDATE transplants SET step = 2147483647 WHERE " + kT + "22",
    "UPDATE transplants SET step = 99999999999 WHERE " + kT + "23",
    "UPDATE transplants SET step = NULL WHERE " + kT + "24",
    "UPDATE transplants SET pos = -1 WHERE " + kT + "25",
    "UPDATE transplants SET pos = 100000 WHERE " + kT + "26",
    "UPDATE transplants SET kl = NULL WHERE chunk = 0 AND step = 2",
    "UPDATE transplants SET kl = 'abc' WHERE chunk = 0 AND step = 2",
    "UPDATE transplants SET kl = 9e999 WHERE chunk = 1 AND step = 4",
    "UPDATE transplants SET direction = 'sideways' WHERE " + kT + "27",
    "UPDATE transplants SET point = '' WHERE chunk = 0 AND step = 1",
    "UPDATE transplants SET point = 'l_out-99' WHERE chunk = 1 AND step = 2 AND pos = 20",
    "DELETE FROM transplants WHERE chunk = 1 AND step = 3",
    "DELETE FROM transplants WHERE chunk = 1",
    // positions
    "UPDATE positions SET pos = -1 WHERE chunk = 0 AND pos = 20 AND comparison = 'diff'",
    "UPDATE positions SET pos = 31 WHERE chunk = 0 AND pos = 30 AND comparison = 'diff'",
    "UPDATE positions SET pos = 100000 WHERE chunk = 1 AND pos = 25",
    "UPDATE positions SET kl = NULL WHERE chunk = 0 AND pos = 20",
    "UPDATE positions SET kl = 'x' WHERE chunk = 0 AND pos = 21",
    "UPDATE positions SET nll_b = 9e999 WHERE chunk = 1 AND pos = 22",
    "UPDATE positions SET top5_a = 'garbage' WHERE chunk = 0 AND pos = 20",
    "UPDATE positions SET top5_b = '[[1,0.5]]' WHERE chunk = 0 AND pos = 20",
    "UPDATE positions SET top5_a = '[[1,2],[2,0],[3,0],[4,0],[5,0]]' WHERE chunk = 1 AND pos = 20",
    "UPDATE positions SET target_id = -5 WHERE chunk = 0 AND pos = 20",
    "UPDATE positions SET target_id = 1099511627776 WHERE chunk = 0 AND pos = 21",
    "UPDATE positions SET scored = 7 WHERE chunk = 0 AND pos = 3",
    "UPDATE positions SET top1_a = 12345 WHERE chunk = 0",
    "DELETE FROM positions WHERE comparison = 'floor' AND chunk = 1 AND pos = 20",
    // layers
    "UPDATE layers SET layer = -1 WHERE chunk = 0 AND pos = 20 AND layer = 0",
    "UPDATE layers SET layer = 1099511627776 WHERE chunk = 0 AND pos = 21 AND layer = 1",
    "UPDATE layers SET pos = -1 WHERE chunk = 1 AND pos = 20 AND layer = 2",
    "UPDATE layers SET pos = 1000000 WHERE chunk = 1 AND pos = 21 AND layer = 2",
    "UPDATE layers SET rel_err = NULL WHERE chunk = 0 AND layer = 3",
    "UPDATE layers SET cosine = 9e999 WHERE chunk = 0 AND layer = 3",
    // tokens and chunks
    "UPDATE tokens SET token_id = -1 WHERE chunk = 0 AND pos = 5",
    "UPDATE tokens SET token_id = 1099511627776 WHERE chunk = 0 AND pos = 6",
    "DELETE FROM tokens WHERE chunk = 0 AND pos = 7",
    "DELETE FROM tokens WHERE chunk = 1 AND pos = 31",
    "UPDATE chunks SET n_tokens = 0 WHERE chunk = 0",
    "UPDATE chunks SET n_tokens = 1000000000 WHERE chunk = 1",
    "UPDATE chunks SET chunk = -1 WHERE chunk = 1",
    "UPDATE chunks SET seconds = 'slow' WHERE chunk = 0",
    // residuals
    "UPDATE residuals SET width = 0 WHERE chunk = 0 AND layer = 0 AND arm = 'a'",
    "UPDATE residuals SET width = -1 WHERE chunk = 0 AND layer = 1 AND arm = 'a'",
    "UPDATE residuals SET data = zeroblob(3) WHERE chunk = 1 AND layer = 0 AND arm = 'b'",
    "UPDATE residuals SET n_tokens = 1000000000 WHERE chunk = 1 AND layer = 1",
    "UPDATE residuals SET arm = 'c' WHERE chunk = 0 AND layer = 2 AND arm = 'a'",
    // vocabulary
    "UPDATE vocab SET text = NULL WHERE token_id = 1",
    "UPDATE vocab SET token_id = -1 WHERE token_id = 2",
    "DELETE FROM vocab",
    // meta
    "UPDATE meta SET value = '[]' WHERE key = 'config'",
    "UPDATE meta SET value = '{\"chunk\": \"x\"}' WHERE key = 'config'",
    "UPDATE meta SET value = 'not json' WHERE key = 'config'",
    "UPDATE meta SET value = '5' WHERE key = 'provenance'",
    "UPDATE meta SET value = '{\"arms\": 3, \"llama_cpp\": []}' WHERE key = 'provenance'",
    "UPDATE meta SET value = 'sweep' WHERE key = 'kind'",
    "UPDATE meta SET value = 'bogus' WHERE key = 'kind'",
    "UPDATE meta SET value = 'x' WHERE key = 'schema_version'",
    "DELETE FROM meta WHERE key = 'status'",
};

}  // namespace

TEST(DamagedFiles, EveryReaderRefusesOrShowsWhatItReadsNeverCrashes) {
  HD_REQUIRE_SHARED();
  ASSERT_FALSE(original().empty());
  int refused = 0, shown = 0, applied = 0;
  for (size_t i = 0; i < kEdits.size(); ++i) {
    const std::string& sql = kEdits[i];
    const std::string copy = dir() + "/edit" + std::to_string(i) + ".hdy";
    fs::copy_file(original(), copy, fs::copy_options::overwrite_existing);
    std::string error;
    const int rc = exec_sql(copy, sql, error);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
      // A NOT NULL the schema itself enforces: that edit cannot be made, no reader meets it.
      continue;
    }
    ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << error;
    ++applied;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"show", copy, "--transplants", "--components", "--worst", "3",
                                   "--flips", "--position", "0:20"},
          {"show", copy, "--json"},
          {"export", copy, "--positions", "--format", "jsonl"},
          {"report", copy, "-o", copy + ".html", "--force"}}) {
      const CliResult r = run_cli(args);
      std::string cmd;
      for (const auto& a : args) cmd += a + " ";
      SCOPED_TRACE(sql + "\n  " + cmd);
      ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << "exit " << r.exit_code << "\n" << r.err;
      if (r.exit_code == 2) {
        ++refused;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_EQ(r.err.rfind("heterodyne: error: ", 0), 0u) << r.err;
        EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
        EXPECT_TRUE(r.out.empty()) << "output before the error";
      } else {
        ++shown;
      }
    }
  }
  // Only the NOT NULL edits (a step, a vocabulary text) cannot be made.
  EXPECT_GE(applied, static_cast<int>(kEdits.size()) - 2);
  // Most edits are damage a reader must name; a few (a top-1 column no reader uses, a missing
  // status) leave a file that still reads.
  EXPECT_GT(refused, 100);
  EXPECT_GT(shown, 0);
}

namespace {

// A sweep's rows edited to what no sweep writes: `sweep --resume` (of the file made unfinished)
// and `verify` (of the file sealed again, so that the rows are what it meets) refuse each with
// one line. An edited value that still has the form of a row is caught by the chunk's hash.
const std::vector<std::string> kSweepEdits = {
    "UPDATE sweep_positions SET kl = NULL WHERE chunk = 0 AND mask = 1 AND pos = 3",
    "UPDATE sweep_positions SET kl = 'x' WHERE chunk = 1 AND mask = 1 AND pos = 4",
    "UPDATE sweep_positions SET nll = 9e999 WHERE chunk = 0 AND comparison = 'floor' AND pos = 5",
    "UPDATE sweep_positions SET pos = 1000 WHERE chunk = 0 AND mask = 1 AND pos = 6",
    "UPDATE sweep_positions SET pos = -1 WHERE chunk = 0 AND mask = 1 AND pos = 0",
    "DELETE FROM sweep_positions WHERE chunk = 1 AND mask = 1 AND pos = 10",
    "UPDATE sweep_positions SET mask = 9 WHERE chunk = 0 AND mask = 1",
    "UPDATE sweep_positions SET comparison = 'sideways' WHERE chunk = 0 AND comparison = 'floor'",
    "UPDATE sweep_positions SET kl = 0.5 WHERE chunk = 0 AND mask = 0 AND pos = 2",
    "UPDATE sweep_positions SET kl = kl + 0.25 WHERE chunk = 1 AND mask = 1 AND pos = 7",
    "UPDATE sweep_flips SET flips = -1 WHERE chunk = 0 AND mask = 1",
    "UPDATE sweep_flips SET flips = 'many' WHERE chunk = 0 AND mask = 1",
    "DELETE FROM sweep_flips WHERE chunk = 1 AND comparison = 'floor'",
    "DROP TABLE sweep_flips",
    "DELETE FROM meta WHERE key = 'sweep_rows_sha256/1'",
    "UPDATE meta SET value = '[]' WHERE key = 'sweep_combinations'",
    "UPDATE meta SET value = '[{\"possible\": 3}]' WHERE key = 'sweep_combinations'",
    // Rows of a chunk the sweep does not have: sealing must not keep them.
    "INSERT INTO sweep_positions SELECT 7, comparison, mask, pos, kl, nll FROM sweep_positions "
    "WHERE chunk = 0",
    "INSERT INTO sweep_flips SELECT -1, comparison, mask, flips FROM sweep_flips WHERE chunk = 0",
};

// One error line on stderr, the last (verify's progress lines may come before it; its verdicts,
// "integrity: ok", go to stdout).
void expect_one_line(const CliResult& r, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(r.exit_code == 1 || r.exit_code == 2) << "exit " << r.exit_code << "\n" << r.err;
  const std::string error = "heterodyne: error: ";
  const size_t at = r.err.find(error);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_TRUE(at == 0 || r.err[at - 1] == '\n') << r.err;
  EXPECT_EQ(r.err.find('\n', at), r.err.size() - 1) << r.err;
  EXPECT_EQ(r.err.find(error, at + 1), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

}  // namespace

TEST(DamagedFiles, SweepRowsNoSweepWritesAreRefusedInOneLine) {
  HD_REQUIRE_SHARED();
  const std::string sweep = dir() + "/sweep.hdy";
  const CliResult made = run_cli({"sweep", "--a", shared_path("models/stories260K.gguf"),
                                  "--b-ub", "16", "-f", shared_path("corpora/tom-sawyer.txt"),
                                  "--chunk", "32", "--max-chunks", "2", "-o", sweep, "--force"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  for (size_t i = 0; i < kSweepEdits.size(); ++i) {
    const std::string& sql = kSweepEdits[i];
    std::string error;
    const std::string unfinished = dir() + "/sweep-resume" + std::to_string(i) + ".hdy";
    fs::copy_file(sweep, unfinished, fs::copy_options::overwrite_existing);
    ASSERT_EQ(exec_sql(unfinished,
                       "DELETE FROM meta WHERE key IN ('sweep', 'integrity_sha256'); UPDATE meta "
                       "SET value = 'running' WHERE key = 'status'; " + sql,
                       error),
              SQLITE_OK)
        << sql << ": " << error;
    const CliResult resumed = run_cli({"sweep", "--resume", unfinished});
    EXPECT_EQ(resumed.exit_code, 2) << sql << "\n" << resumed.err;
    expect_one_line(resumed, "sweep --resume after " + sql);

    const std::string sealed = dir() + "/sweep-verify" + std::to_string(i) + ".hdy";
    fs::copy_file(sweep, sealed, fs::copy_options::overwrite_existing);
    ASSERT_EQ(exec_sql(sealed, sql, error), SQLITE_OK) << sql << ": " << error;
    hd::store::Experiment::open(sealed, true).seal();
    expect_one_line(run_cli({"verify", sealed}), "verify after " + sql);
    const CliResult shown = run_cli({"show", sealed, "--json"});
    EXPECT_TRUE(shown.exit_code == 0 || shown.exit_code == 2) << shown.err;
  }
}
