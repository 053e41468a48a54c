// Killed runs lose at most the chunk in flight, --resume finishes them with the same numbers,
// and verify reproduces a stored run bitwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "analysis/compare.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd;

namespace {

struct Fixture {
  std::string dir, model, text;
};

// A model slow enough (32000-token vocabulary) that a run can be caught mid-way.
const Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.dir = test::temp_dir("resume");
    x.model = x.dir + "/tiny-llama-f16.gguf";
    const auto r =
        test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", x.model});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    x.text = test::shared_path("corpora/tom-sawyer.txt");
    return x;
  }();
  return f;
}

std::vector<std::string> diff_args(const Fixture& f, const std::string& out) {
  return {"diff", "--a",          f.model, "--b-quant", "Q4_0", "--text-file", f.text, "--chunk",
          "64",   "--max-chunks", "8",     "-t",        "2",    "-o",          out};
}

int stored_chunks(const std::string& path) {
  sqlite3* db = nullptr;
  int n = 0;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM chunks", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return n;
}

// Starts a run and sends `sig` once `after` chunks are stored. Returns the exit status.
int interrupt(const std::vector<std::string>& args, const std::string& path, int after, int sig) {
  const pid_t pid = test::spawn_cli(args, "/dev/null", "/dev/null");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (stored_chunks(path) < after && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

void expect_same_results(const std::string& x, const std::string& y) {
  const auto a = store::Experiment::open(x, false);
  const auto b = store::Experiment::open(y, false);
  ASSERT_EQ(a.finished_chunks(), b.finished_chunks());
  for (int c : a.finished_chunks()) {
    const auto m = analysis::first_mismatch(a.read_chunk(c), b.read_chunk(c));
    EXPECT_FALSE(m.has_value()) << *m;
  }
}

}  // namespace

TEST(Resume, KilledRunsResumeToTheSameNumbers) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string whole = f.dir + "/whole.hdy";
  ASSERT_EQ(test::run_cli(diff_args(f, whole)).exit_code, 0);
  ASSERT_EQ(stored_chunks(whole), 8);

  for (int after : {1, 3, 6}) {
    const std::string cut = f.dir + "/cut" + std::to_string(after) + ".hdy";
    const int status = interrupt(diff_args(f, cut), cut, after, SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it could be killed";
    const int kept = stored_chunks(cut);
    EXPECT_GE(kept, after);
    EXPECT_LT(kept, 8);
    const auto r = test::run_cli({"diff", "--resume", cut});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(stored_chunks(cut), 8);
    expect_same_results(whole, cut);
    EXPECT_EQ(test::run_cli({"verify", cut, "--integrity-only"}).exit_code, 0);
  }
}

TEST(Resume, SigtermStopsAfterTheChunkInFlight) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string path = f.dir + "/term.hdy";
  const int status = interrupt(diff_args(f, path), path, 2, SIGTERM);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const int kept = stored_chunks(path);
  EXPECT_GE(kept, 2);
  EXPECT_LT(kept, 8);
  const auto r = test::run_cli({"diff", "--resume", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(stored_chunks(path), 8);
}

TEST(Verify, ReproducesBitwiseAndCatchesTampering) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string path = f.dir + "/verify.hdy";
  auto args = diff_args(f, path);
  args[10] = "3";  // --max-chunks 3
  args.push_back("--save-residuals");
  ASSERT_EQ(test::run_cli(args).exit_code, 0);
  auto r = test::run_cli({"verify", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("all 3 chunks reproduce bitwise"), std::string::npos) << r.err;

  // One stored number moved by one part in 1e12: the hash catches it.
  const std::string tampered = f.dir + "/tampered.hdy";
  std::filesystem::copy_file(path, tampered);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(tampered.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE positions SET kl = kl * (1 + 1e-12) WHERE chunk = 1 AND pos = 9",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  r = test::run_cli({"verify", tampered, "--integrity-only"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("integrity check failed"), std::string::npos) << r.err;

  // Re-sealed, the hash agrees again, and only re-running the arms finds the changed number.
  store::Experiment::open(tampered, true).seal();
  EXPECT_EQ(test::run_cli({"verify", tampered, "--integrity-only"}).exit_code, 0);
  r = test::run_cli({"verify", tampered});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("chunk 1 pos 9 (diff) kl: stored"), std::string::npos) << r.err;
}

TEST(Verify, AnotherLlamaCommitNeedsForce) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string path = f.dir + "/commit.hdy";
  auto args = diff_args(f, path);
  args[10] = "1";  // --max-chunks 1
  ASSERT_EQ(test::run_cli(args).exit_code, 0);
  {
    store::Experiment e = store::Experiment::open(path, true);
    auto prov = nlohmann::json::parse(*e.meta("provenance"));
    prov["llama_cpp"]["commit"] = "0123456789abcdef0123456789abcdef01234567";
    e.set_meta("provenance", prov.dump());
    e.seal();
  }
  auto r = test::run_cli({"verify", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("made with llama.cpp 0123456789ab"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  r = test::run_cli({"verify", path, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // same kernels in truth, so the numbers still match
}
