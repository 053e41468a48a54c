// Slips on the command line are one line and exit 2 (issue 15, class 6): numbers that are not
// finite, empty values that would silently mean "all" or "default", comma lists with empty
// entries, bytes that are not UTF-8, a malformed --position (refused before anything is
// printed), and two writers of one output at once (the second is told why).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "store/experiment.h"
#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::CliResult;
using hd::test::expect_refused;
using hd::test::read_file;
using hd::test::run_cli;
using hd::test::shared_path;

namespace {

std::string dir() {
  static const std::string d = hd::test::temp_dir("slips");
  return d;
}
std::string m() { return shared_path("models/stories260K.gguf"); }
std::string t() { return shared_path("corpora/tom-sawyer.txt"); }

const std::string& experiment() {
  static const std::string p = hd::test::make_experiment(dir() + "/real.hdy", {"--transplants"});
  return p;
}

}  // namespace

TEST(FlagSlips, CalibrateRefusesNumbersThatAreNotFiniteAndKeepsItsTolerances) {
  HD_REQUIRE_SHARED();
  const std::string ref = dir() + "/ref";
  ASSERT_EQ(
      run_cli({"capture", "--model", m(), "-f", t(), "--max-tokens", "32", "-o", ref}).exit_code,
      0);
  ASSERT_EQ(run_cli({"calibrate", "--reference", ref}).exit_code, 0);
  const std::string tolerances = read_file(ref + "/tolerances.json");
  ASSERT_FALSE(tolerances.empty());
  for (const std::string v : {"nan", "NaN", "inf", "-inf", "-1", "0", "abc", "1e999"}) {
    expect_refused({"calibrate", "--reference", ref, "--safety", v, "--force"},
                   "must be a finite number > 0");
  }
  for (const std::string v : {"nan", "-0.1", "inf"}) {
    expect_refused({"calibrate", "--reference", ref, "--jitter-floor", v, "--force"},
                   "must be a finite number >= 0");
    expect_refused({"check", "--reference", ref, "--model", m(), "--jitter-floor", v},
                   "must be a finite number >= 0");
  }
  expect_refused({"calibrate", "--reference", ref}, "already exists: use --force");
  EXPECT_EQ(read_file(ref + "/tolerances.json"), tolerances);
  EXPECT_EQ(run_cli({"calibrate", "--reference", ref, "--force"}).exit_code, 0);
  EXPECT_EQ(read_file(ref + "/tolerances.json"), tolerances);  // the same runs, the same numbers
}

TEST(FlagSlips, AnEmptyValueIsASlipNotAllOrTheDefault) {
  HD_REQUIRE_SHARED();
  const std::string out = dir() + "/empty.hdy";
  for (const std::string flag :
       {"--max-chunks", "--chunk", "--b-quant", "-o", "--score-from", "-ub", "--b-ctk", "-t"}) {
    std::vector<std::string> args = {"diff", "--a", m(), "-f", t(), "--chunk", "64"};
    if (flag != "--b-quant") args.insert(args.end(), {"--b-quant", "Q8_0"});
    if (flag != "-o") args.insert(args.end(), {"-o", out});
    args.insert(args.end(), {flag, ""});
    expect_refused(args, "needs a value, not an empty string");
  }
  expect_refused({"diff", "--a", m(), "--b-quant", "Q8_0", "-f", t(), "--max-chunks=", "-o", out},
                 "--max-chunks needs a value, not an empty string");
  expect_refused({"show", experiment(), "--worst", ""}, "needs a value, not an empty string");
  expect_refused({"export", experiment(), "--positions", "--format", ""},
                 "needs a value, not an empty string");
  expect_refused({"serve", "--models", dir(), "--port", ""}, "needs a value, not an empty string");
  EXPECT_FALSE(fs::exists(out));
}

TEST(FlagSlips, ListsWithEmptyEntriesAreNamed) {
  HD_REQUIRE_SHARED();
  for (const std::string list : {",", "127.0.0.1:1,", ",127.0.0.1:1", "a:1,,b:2"}) {
    expect_refused(
        {"diff", "--a", m(), "--b", m(), "--b-rpc", list, "-f", t(), "-o", dir() + "/rpc.hdy"},
        "has an empty entry");
  }
  // The list takes one argument: the flag after it is a flag, not a server.
  expect_refused({"diff", "--a", m(), "--b", m(), "--b-rpc", "127.0.0.1:1", "127.0.0.1:2", "-f",
                  t(), "-o", dir() + "/rpc.hdy"},
                 "was not expected");
}

TEST(FlagSlips, BytesThatAreNotUtf8AreRefusedBeforeAnythingIsStored) {
  HD_REQUIRE_SHARED();
  expect_refused({"diff", "--a", m(), "--b-quant", "Q8_0", "-f", t(), "-o", dir() + "/\xff.hdy"},
                 "is not valid UTF-8");
  expect_refused(
      {"diff", "--a", m() + "\xc0\xaf", "--b-quant", "Q8_0", "-f", t(), "-o", dir() + "/x.hdy"},
      "('" + m() + "\\xc0\\xaf') is not valid UTF-8");
  expect_refused({"show", std::string("\xed\xa0\x80.hdy")}, "is not valid UTF-8");
  EXPECT_FALSE(fs::exists(dir() + "/\xff.hdy"));
}

TEST(FlagSlips, AMalformedPositionIsRefusedBeforeAnythingIsPrinted) {
  HD_REQUIRE_SHARED();
  for (const std::string p :
       {"abc", "3x:5", "1:2:3", "-1:5", "1:", ":4", "99999999999:1", "1:5x"}) {
    expect_refused({"show", experiment(), "--position", p}, "--position wants CHUNK:POS");
  }
  // Well formed, but no scored position is stored there (the last token predicts nothing; there
  // is no chunk 7): the summary is not printed before the error.
  expect_refused({"show", experiment(), "--position", "0:63"}, "no scored position 0:63");
  expect_refused({"show", experiment(), "--position", "7:40"}, "no scored position 7:40");
  // Without transplants a position still shows its context and both top-5, counted as --worst
  // counts it (P: the logits that predict token P + 1).
  const auto r = run_cli({"show", experiment(), "--position", "0:20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("\n  0:20  KL", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("    A: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    B: "), std::string::npos) << r.out;
}

TEST(FlagSlips, TwoWritersOfOneOutputAtOnceGetTheRightCause) {
  HD_REQUIRE_SHARED();
  const std::string out = dir() + "/busy.hdy";
  const std::string before = read_file(experiment());
  // A first writer, held still with SIGSTOP while the others try: the order of events is then
  // not left to timing. Its part exists from its start until its first chunk is stored, so that
  // chunk is made slow (256 tokens, components at every point: about 1.6 s unloaded; 64 tokens
  // gave 0.15 s, which a loaded CI machine once let pass unseen); and should the part still be
  // missed, the old file is put back and the writer started again. Its 4 chunks after the first
  // (about 6 s) leave the SIGSTOP after publishing time enough, and the resume at the end short.
  // The writer makes its part, then locks it, then locks the file it replaces: it is stopped
  // only once all of that is done (being_written: the target's lock, taken last).
  int first = -1;
  struct Reaped {  // a failed assertion leaves no writer behind
    int& pid;
    ~Reaped() {
      if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaped{first};
  bool held = false;
  for (int attempt = 0; attempt < 4 && !held; ++attempt) {
    fs::copy_file(experiment(), out, fs::copy_options::overwrite_existing);
    first = hd::test::spawn_cli({"diff", "--a", m(), "--b-quant", "Q8_0", "-f", t(), "--chunk",
                                 "256", "--max-chunks", "5", "--components", "-o", out, "--force"},
                                "/dev/null", dir() + "/first.err");
    ASSERT_GT(first, 0);
    bool exited = false;
    for (int i = 0; i < 60000 && !held && !exited; ++i) {
      if (fs::exists(out + ".part")) {
        ::kill(first, SIGSTOP);
        held = fs::exists(out + ".part") && hd::store::Experiment::being_written(out);
        if (held) break;
        ::kill(first, SIGCONT);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      exited = ::waitpid(first, nullptr, WNOHANG) == first;
    }
    ASSERT_FALSE(exited) << read_file(dir() + "/first.err");
    if (held) break;
    ::kill(first, SIGKILL);
    ::waitpid(first, nullptr, 0);
    for (const char* left : {".part", ".part-journal", "-journal"}) ::unlink((out + left).c_str());
  }
  ASSERT_TRUE(held) << read_file(dir() + "/first.err");
  // Before the first has published: its part is locked.
  expect_refused({"diff", "--a", m(), "--b-quant", "Q8_0", "-f", t(), "--chunk", "64",
                  "--max-chunks", "1", "-o", out, "--force"},
                 "is being written by another heterodyne process");
  expect_refused({"diff", "--resume", out}, "is being written by another heterodyne process");
  EXPECT_EQ(read_file(out), before);
  ::kill(first, SIGCONT);
  // After it has published (its part is gone): the experiment it writes is locked.
  for (int i = 0; i < 15000 && fs::exists(out + ".part"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_FALSE(fs::exists(out + ".part"));
  ::kill(first, SIGSTOP);
  expect_refused({"diff", "--a", m(), "--b-quant", "Q8_0", "-f", t(), "--chunk", "64",
                  "--max-chunks", "1", "-o", out, "--force"},
                 "is being written by another heterodyne process");
  ::kill(first, SIGTERM);
  ::kill(first, SIGCONT);
  int status = 0;
  ::waitpid(first, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << read_file(dir() + "/first.err");
  EXPECT_NE(read_file(out), before);
  EXPECT_EQ(run_cli({"diff", "--resume", out}).exit_code, 0);
}
