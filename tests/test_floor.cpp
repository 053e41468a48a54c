// floor keeps its rows in tables, group by group: what show prints comes from them, the
// integrity hash covers them, a stopped or killed floor resumes to the same rows, a damaged
// row is refused in one line, and a file written before the tables still shows and verifies.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "store/experiment.h"
#include "test_support.h"

using nlohmann::json;

namespace {

struct FloorTables : testing::Test {
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("floor"));
    ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o",
                                 *dir_ + "/m.gguf"})
                  .exit_code,
              0);
    std::string text;
    const char* words[] = {"river", "stone", "light",  "quietly", "the", "and",
                           "under", "a",     "bridge", "morning", "of",  "walked",
                           "green", "old",   "window", "rain"};
    for (int i = 0; i < 900; ++i)
      text += std::string(words[(i * 7 + i / 5) % 16]) + (i % 11 ? " " : ". ");
    hd::test::write_file(*dir_ + "/t.txt", text);
  }
  // Three groups (flash attention off, on, auto; one thread: two share the test's cores
  // badly) of three runs each, one chunk.
  static std::vector<std::string> args(const std::string& out) {
    return {"floor",
            "-m",
            *dir_ + "/m.gguf",
            "-f",
            *dir_ + "/t.txt",
            "--ub",
            "2,3,64",
            "--fa",
            "off,on,auto",
            "--threads",
            "1",
            "--ref-ub",
            "64",
            "--chunk",
            "64",
            "--max-chunks",
            "1",
            "-o",
            path(out),
            "--force"};
  }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  static json shown(const std::string& name) {
    const auto r = hd::test::run_cli({"show", path(name), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["floor"] : json();
  }
  static std::string* dir_;
};
std::string* FloorTables::dir_ = nullptr;

// Runs SQL on an experiment file; returns the first column of the last row ("" when none).
std::string sql(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string last;
  char* err = nullptr;
  const auto keep = [](void* out, int, char** values, char**) {
    *static_cast<std::string*>(out) = values[0] ? values[0] : "NULL";
    return 0;
  };
  EXPECT_EQ(sqlite3_exec(db, statements.c_str(), keep, &last, &err), SQLITE_OK) << err;
  sqlite3_free(err);
  sqlite3_close(db);
  return last;
}

// The REAL in the first column of the first row, as stored: SQLite's printf('%.17g') is not
// (3.40 converts to about 16 digits, and a KL that differs in its 17th read back as another).
double sql_real(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &st, nullptr), SQLITE_OK) << query;
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << query;
  EXPECT_EQ(sqlite3_column_type(st, 0), SQLITE_FLOAT) << query;
  const double v = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

void reseal(const std::string& path) { hd::store::Experiment::open(path, true).seal(); }

}  // namespace

TEST_F(FloorTables, StoresItsRowsInTablesThatShowAndTheIntegrityHashRead) {
  ASSERT_EQ(hd::test::run_cli(args("f.hdy")).exit_code, 0);
  const std::string f = path("f.hdy");
  EXPECT_EQ(sql(f, "SELECT count(*) FROM floor_runs"), "9");
  EXPECT_EQ(sql(f, "SELECT count(*) FROM floor_patterns"), "3");
  EXPECT_EQ(sql(f, "SELECT count(*) FROM meta WHERE key LIKE 'floor_group_sha256/%'"), "3");
  // The runs a group ran at the reference ubatch are the group's reference: identical.
  EXPECT_EQ(sql(f, "SELECT count(*) FROM floor_runs WHERE n_ubatch = 64 AND identical = 1"), "3");
  const json s = shown("f.hdy");
  ASSERT_EQ(s["rows"].size(), 9u);
  ASSERT_EQ(s["patterns"].size(), 3u);
  EXPECT_EQ(s["rows"][4]["n_threads"].get<int>(), 1);  // group 1: fa on, ubatch 3
  EXPECT_EQ(s["rows"][4]["flash_attn"], "on");
  EXPECT_EQ(s["rows"][4]["n_ubatch"], 3);
  // Shown as the double stored, bit for bit.
  EXPECT_EQ(sql_real(f, "SELECT kl_max FROM floor_runs WHERE group_index = 2 AND n_ubatch = 2"),
            s["rows"][6]["kl_max"].get<double>());
  EXPECT_EQ(s["patterns"][0]["same_as_reference"], true);
  // The reference run's arm facts, as a diff records each of its arms.
  const json arm = json::parse(sql(f, "SELECT value FROM meta WHERE key = 'provenance'"))["arms"]["reference"];
  EXPECT_EQ(arm["n_ubatch"], 64);
  EXPECT_EQ(arm["flash_attn"], "off");
  EXPECT_EQ(arm["n_threads_used"], 1);
  EXPECT_EQ(arm["architecture"], "llama");
  EXPECT_EQ(arm["runs_on"]["process"], "in-process");
  EXPECT_EQ(arm["model_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(hd::test::run_cli({"verify", f}).exit_code, 0);

  sql(f, "UPDATE floor_runs SET kl_max = kl_max + 1 WHERE group_index = 2 AND n_ubatch = 2");
  EXPECT_EQ(hd::test::run_cli({"verify", f, "--integrity-only"}).exit_code, 1);
  reseal(f);  // an edit whose hash was recomputed: verify's re-run still catches it
  const auto r = hd::test::run_cli({"verify", f});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("group 2"), std::string::npos) << r.err;
}

TEST_F(FloorTables, StoppedOrKilledResumesToTheSameRows) {
  ASSERT_EQ(hd::test::run_cli(args("whole.hdy")).exit_code, 0);
  for (const int sig : {SIGTERM, SIGKILL}) {
    const std::string name = sig == SIGTERM ? "term.hdy" : "kill.hdy";
    const pid_t pid = hd::test::spawn_cli(args(name), "/dev/null", path(name) + ".err");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    // The file appears with its first group.
    while (!std::filesystem::exists(path(name)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;  // it finished first
    if (sig == SIGTERM) {
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), 130);
      const std::string err = hd::test::read_file(path(name) + ".err");
      EXPECT_NE(err.find("groups to go; finish with: heterodyne floor --resume"), std::string::npos)
          << err;
    }
    const int kept = std::stoi(sql(path(name), "SELECT count(*) FROM floor_patterns"));
    EXPECT_GE(kept, 1);
    EXPECT_LT(kept, 3);
    const auto r = hd::test::run_cli({"floor", "--resume", path(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(std::to_string(kept) + " of 3 groups already stored"), std::string::npos)
        << r.err;
    EXPECT_EQ(shown(name).dump(), shown("whole.hdy").dump());
    EXPECT_EQ(hd::test::run_cli({"verify", path(name), "--integrity-only"}).exit_code, 0);
  }
  hd::test::expect_refused({"floor", "--resume", path("whole.hdy"), "--ub", "3"},
                           "it takes no other flag");
}

TEST_F(FloorTables, DamagedOrEditedRowsAreRefusedInOneLine) {
  ASSERT_EQ(hd::test::run_cli(args("d.hdy")).exit_code, 0);
  const std::string d = path("d.hdy"), e = path("e.hdy"), g = path("g.hdy");
  const std::string m = path("m.hdy"), n = path("n.hdy");
  for (const std::string& copy : {e, g, m, n}) std::filesystem::copy_file(d, copy);
  // Groups resumed on another machine (another default thread count) would mix references.
  sql(m,
      "UPDATE meta SET value = json_set(value, '$.arms.reference.n_threads_used', 999) WHERE "
      "key = 'provenance'; UPDATE meta SET value = 'running' WHERE key = 'status'");
  hd::test::expect_refused({"floor", "--resume", m}, "resume it where it ran");
  // A floor without its tables is damaged: nothing is added to it.
  sql(n,
      "DROP TABLE floor_runs; DROP TABLE floor_patterns; UPDATE meta SET value = 'running' "
      "WHERE key = 'status'");
  hd::test::expect_refused({"floor", "--resume", n}, "is damaged: its floor tables are missing");
  sql(d, "UPDATE floor_runs SET positions_differing = positions + 1 WHERE group_index = 1");
  hd::test::expect_refusal(hd::test::run_cli({"show", d}), 2, "is damaged: floor_runs (group 1",
                           "show");
  sql(e, "DELETE FROM floor_patterns WHERE group_index = 0");
  hd::test::expect_refusal(hd::test::run_cli({"show", e, "--json"}), 2, "gap in the groups",
                           "show --json");
  // An unfinished floor whose stored group was edited is not added to.
  sql(g,
      "UPDATE floor_patterns SET summary = 'edited' WHERE group_index = 1;"
      "UPDATE meta SET value = 'running' WHERE key = 'status'");
  hd::test::expect_refused({"floor", "--resume", g},
                           "floor group 1 was changed after it was stored");
}

// A file written by heterodyne before format version 2 (rows and patterns as JSON in meta
// "floor", tests/data/floor-before-tables.sql is one, dumped with sqlite3's .dump) is refused in
// one line naming its version and this build's, by every command.
TEST_F(FloorTables, AFileOfTheFormatBeforeIsRefusedNamingItsVersion) {
  const std::string old = path("old.hdy");
  sql(old, hd::test::read_file(std::string(HD_SOURCE_DIR) + "/tests/data/floor-before-tables.sql"));
  const std::string says = "has schema version '1', an older format this heterodyne no longer "
                           "reads (run it again with this build) (this build reads version 2)";
  hd::test::expect_refused({"verify", old, "--integrity-only"}, says);
  hd::test::expect_refused({"show", old}, says);
  hd::test::expect_refused({"show", old, "--json"}, says);
  hd::test::expect_refused({"floor", "--resume", old}, says);
}
