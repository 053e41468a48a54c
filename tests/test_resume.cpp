// Killed runs lose at most the chunk in flight, --resume finishes them with the same numbers,
// and verify reproduces a stored run bitwise.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
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


// Starts a run and sends `sig` once `after` chunks are stored. Returns the exit status.
int interrupt(const std::vector<std::string>& args, const std::string& path, int after, int sig) {
  const pid_t pid = test::spawn_cli(args, "/dev/null", "/dev/null");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (test::stored_chunks(path) < after && std::chrono::steady_clock::now() < deadline) {
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
  ASSERT_EQ(test::stored_chunks(whole), 8);

  for (int after : {1, 3, 6}) {
    const std::string cut = f.dir + "/cut" + std::to_string(after) + ".hdy";
    const int status = interrupt(diff_args(f, cut), cut, after, SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it could be killed";
    const int kept = test::stored_chunks(cut);
    EXPECT_GE(kept, after);
    EXPECT_LT(kept, 8);
    const auto r = test::run_cli({"diff", "--resume", cut});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::stored_chunks(cut), 8);
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
  const int kept = test::stored_chunks(path);
  EXPECT_GE(kept, 2);
  EXPECT_LT(kept, 8);
  const auto r = test::run_cli({"diff", "--resume", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::stored_chunks(path), 8);
}

// Whether the file holds its configuration yet (the run has got past creating it).
bool has_config(const std::string& path) {
  sqlite3* db = nullptr;
  bool yes = false;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM meta WHERE key = 'provenance'", -1, &st,
                           nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      yes = sqlite3_column_int(st, 0) > 0;
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return yes;
}

// SIGKILL a `diff --transplants` run at 5 moments drawn from a seeded generator, anywhere in
// the run (mid-chunk, mid-transplant, mid-write); each --resume finishes it, and every stored
// number is bitwise what an uninterrupted run stored.
TEST(Resume, TransplantRunsKilledAtRandomMomentsResumeBitwise) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  auto args = [&](const std::string& out) {
    auto a = diff_args(f, out);
    a.push_back("--transplants");
    return a;
  };
  const std::string whole = f.dir + "/whole-transplants.hdy";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(test::run_cli(args(whole)).exit_code, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::mt19937 rng(20261129);
  std::uniform_real_distribution<double> when(0.0, 0.9 * seconds);
  int killed = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string cut = f.dir + "/kill" + std::to_string(i) + ".hdy";
    double at = when(rng);
    // A run that finished before its moment (the machine got faster than the timed run) is
    // run again with the moment halved: the kills must land while it runs.
    for (int attempt = 0; attempt < 4; ++attempt, at /= 2) {
      std::filesystem::remove(cut);
      const pid_t pid = test::spawn_cli(args(cut), "/dev/null", "/dev/null");
      const auto start = std::chrono::steady_clock::now();
      // Not before the file has its configuration: a run killed while loading models has no
      // file to resume (it is simply run again).
      while (!has_config(cut) && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
      if (WIFSIGNALED(status)) {
        ++killed;
        break;
      }
    }
    const int kept = test::stored_chunks(cut);
    const auto r = test::run_cli({"diff", "--resume", cut});
    ASSERT_EQ(r.exit_code, 0) << "kill " << i << " at " << at << " s (" << kept << " chunks kept): " << r.err;
    EXPECT_EQ(test::stored_chunks(cut), 8);
    expect_same_results(whole, cut);
    const auto v = test::run_cli({"verify", cut, "--integrity-only"});
    EXPECT_EQ(v.exit_code, 0) << "kill " << i << " at " << at << " s: " << v.err;
  }
  EXPECT_GE(killed, 4) << "most kills should land while the run is still going";
}

// A run killed inside its seal, as an older heterodyne could leave it: marked complete with no
// integrity hash. --resume seals it (it used to call it complete, and verify called it not).
TEST(Resume, AFileKilledMidSealIsSealedByResume) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string path = f.dir + "/mid-seal.hdy";
  ASSERT_EQ(test::run_cli(diff_args(f, path)).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM meta WHERE key = 'integrity_sha256'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);
  EXPECT_EQ(test::run_cli({"verify", path, "--integrity-only"}).exit_code, 2);
  const auto r = test::run_cli({"diff", "--resume", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("already complete"), std::string::npos) << r.err;
  const auto v = test::run_cli({"verify", path, "--integrity-only"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

TEST(Resume, SigintStopsAfterTheChunkInFlight) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string path = f.dir + "/int.hdy";
  const int status = interrupt(diff_args(f, path), path, 1, SIGINT);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_LT(test::stored_chunks(path), 8);
  // Its file says "running", but nothing writes it: show says stopped, and how to finish it.
  const auto shown = test::run_cli({"show", path});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("(stopped, "), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("heterodyne diff --resume " + path + " finishes it"), std::string::npos)
      << shown.out;
  EXPECT_EQ(test::run_cli({"diff", "--resume", path}).exit_code, 0);
  EXPECT_EQ(test::stored_chunks(path), 8);
  EXPECT_NE(test::run_cli({"show", path}).out.find("(complete, "), std::string::npos);
}

// A second writer on the same experiment is refused while the first runs.
TEST(Resume, ASecondWriterIsRefused) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  const std::string path = f.dir + "/two-writers.hdy";
  auto args = diff_args(f, path);
  args.push_back("--transplants");  // slow enough to overlap
  const pid_t pid = test::spawn_cli(args, "/dev/null", "/dev/null");
  while (test::stored_chunks(path) < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto second = test::run_cli({"diff", "--resume", path});
  const auto shown = test::run_cli({"show", path});  // while it runs: running
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_NE(second.err.find("another"), std::string::npos) << second.err;
  EXPECT_NE(shown.out.find("(running, "), std::string::npos) << shown.out << shown.err;
  EXPECT_NE(test::run_cli({"show", path}).out.find("(stopped, "), std::string::npos);
}

// A full disk (simulated with a file-size limit: writes fail with EFBIG) stops the run with one
// line saying so; the chunks stored before it are kept and --resume finishes the file.
TEST(Resume, AFullDiskKeepsWhatWasStored) {
  HD_REQUIRE_SHARED();
  const Fixture& f = fixture();
  // B is quantized into the cache first, without the limit: the limit is for the experiment file.
  // It is the size of a 2-chunk file: a few chunks are stored, then the disk is "full" (a run
  // that stores none leaves nothing: there would be nothing to resume).
  auto warm = diff_args(f, f.dir + "/warm.hdy");
  warm[10] = "2";  // --max-chunks 2
  ASSERT_EQ(test::run_cli(warm).exit_code, 0);
  const auto limit_kib = std::filesystem::file_size(f.dir + "/warm.hdy") / 1024 + 1;
  const std::string path = f.dir + "/full.hdy";
  std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f " + std::to_string(limit_kib) +
                    "; exec " HD_BINARY;
  for (const auto& a : diff_args(f, path)) cmd += " '" + a + "'";
  cmd += "\" 2>" + f.dir + "/full.err";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string err = test::read_file(f.dir + "/full.err");
  EXPECT_NE(err.find("disk"), std::string::npos) << err;
  EXPECT_NE(err.find("diff --resume"), std::string::npos) << err;
  const int kept = test::stored_chunks(path);
  EXPECT_GE(kept, 1);
  EXPECT_LT(kept, 8);
  ASSERT_EQ(test::run_cli({"diff", "--resume", path}).exit_code, 0);
  EXPECT_EQ(test::stored_chunks(path), 8);
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
  EXPECT_NE(r.out.find("all 3 chunks reproduce bitwise"), std::string::npos) << r.out;

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
