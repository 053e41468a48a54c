// Hostile input on the surfaces added last (issue 39): stored files a hostile user edited
// (schema versions, huge or null meta values, rows changed after sealing), merge under a
// scheduler's signals and at the descriptor limit, and the thread count under a CPU mask.
// Each test fails on the code before the fixes (docs/reliability.md).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/system.h"
#include "engine/threads.h"
#include "errors.h"
#include "run/overlap.h"
#include "run/shard.h"
#include "store/experiment.h"
#include "test_support.h"

extern char** environ;

using namespace hd;
namespace fs = std::filesystem;

namespace {

// One sealed diff of stories260K (2 chunks) per test binary, copied by each test that edits it.
const std::string& sealed_run() {
  static const std::string path = [] {
    const std::string dir = test::temp_dir("hostile");
    return test::make_experiment(dir + "/run.hdy");
  }();
  return path;
}

std::string edited_copy(const std::string& name, const std::string& sql) {
  const std::string copy = test::temp_dir("hostile-" + name) + "/" + name + ".hdy";
  fs::copy_file(sealed_run(), copy, fs::copy_options::overwrite_existing);
  if (!sql.empty()) test::sql(copy, sql);
  return copy;
}

// The readers of an experiment file, as a user runs them.
std::vector<std::vector<std::string>> readers(const std::string& file) {
  const std::string dir = fs::path(file).parent_path().string();
  return {{"show", file},
          {"show", file, "--json"},
          {"export", file, "-o", dir + "/rows.csv"},
          {"report", file, "-o", dir + "/page.html"},
          {"verify", file, "--integrity-only"}};
}

}  // namespace

// A version is the digits this build writes, nothing else: atoi read "1abc" and a number past
// any int as old versions, and the file was read.
TEST(Hostile, ASchemaVersionThatIsNotOneThisBuildWritesIsRefused) {
  HD_REQUIRE_SHARED();
  for (const std::string v : {"1abc", "01", " 1", "1.0", "-1", "", "99999999999999999999",
                              "2147483648", "99"}) {
    const std::string f = edited_copy("version",
                                      "UPDATE meta SET value = '" + v + "' WHERE key = 'schema_version'");
    const auto r = test::run_cli({"show", f});
    test::expect_refusal(r, 2, "(this build reads version 2)", "schema version '" + v + "'");
    if (v == "99") EXPECT_NE(r.err.find("newer than this heterodyne reads"), std::string::npos);
  }
}

// A 40 MB provenance: refused by every reader, the same way, before it is loaded (show took
// 20 s and 800 MB and called the file damaged; show --json printed it; report took 1 GB).
TEST(Hostile, AStoredValueLargerThanTheBoundIsRefusedByEveryReaderAlike) {
  HD_REQUIRE_SHARED();
  const std::string f = edited_copy(
      "huge", "UPDATE meta SET value = '\"' || hex(zeroblob(20000000)) || '\"' WHERE key = 'provenance'");
  for (const auto& args : readers(f)) {
    const auto r = test::run_cli(args);
    test::expect_refusal(r, 2, "its stored meta 'provenance' is larger than the 32 MiB a reader "
                         "takes from one field", args[0] + " " + args.back());
  }
  // A token's text: the same kind of refusal from what reads the vocabulary.
  const std::string piece = edited_copy(
      "piece", "UPDATE vocab SET text = hex(zeroblob(1000000)) WHERE token_id = (SELECT min(token_id) FROM vocab)");
  test::expect_refusal(test::run_cli({"show", piece}), 2, "a token's stored text is larger", "vocab");
  // Any other stored text: every reader stops at the bound, before the value is in memory.
  const std::string cell = edited_copy(
      "cell", "UPDATE positions SET top5_a = hex(zeroblob(20000000)) WHERE pos = 3");
  for (const auto& args : readers(cell)) {
    test::expect_refusal(test::run_cli(args), 2, "a stored value is larger than the 32 MiB a "
                         "reader takes from one field", args[0] + " " + args.back());
  }
}

// show warned that the integrity check failed; export wrote the forged rows with nothing on
// stderr and report said only "wrote".
TEST(Hostile, EveryReaderSaysAFileWasChangedAfterItWasSealed) {
  HD_REQUIRE_SHARED();
  const std::string f = edited_copy("forged", "UPDATE positions SET kl = kl * 10 WHERE pos = 3");
  const std::string warning = "warning: '" + f + "' fails its integrity check (changed after it "
                              "was sealed)";
  const std::string dir = fs::path(f).parent_path().string();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"show", f}, {"export", f, "-o", dir + "/rows.csv"}, {"export", f},
           {"report", f, "-o", dir + "/page.html"}, {"report", f, "--data", dir + "/page.json"},
           {"report", f, sealed_run(), "-o", dir + "/compare.html"}}) {
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(warning), std::string::npos) << args[0] << " " << args.back() << ":\n" << r.err;
  }
  const auto clean = test::run_cli({"export", sealed_run(), "-o", dir + "/clean.csv"});
  EXPECT_EQ(clean.err.find("integrity"), std::string::npos) << clean.err;
  // The page leads with the same words (web/src/dom.ts); the browser test draws it.
  EXPECT_NE(test::read_file(dir + "/page.json").find("\"integrity\":\"MISMATCH\""), std::string::npos);
}

TEST(Hostile, ANullOrListProvenanceIsNamedAsWhatItIs) {
  HD_REQUIRE_SHARED();
  const std::string null = edited_copy("null", "UPDATE meta SET value = 'null' WHERE key = 'provenance'");
  test::expect_refusal(test::run_cli({"show", null}), 2,
                       "its stored provenance is null, not a JSON object", "null provenance");
  const std::string list = edited_copy("list", "UPDATE meta SET value = '[]' WHERE key = 'config'");
  test::expect_refusal(test::run_cli({"show", list}), 2,
                       "its stored config is an array, not a JSON object", "list config");
}

namespace {

// Three parts of one run (3 shards of 3 chunks), made once.
const std::vector<std::string>& three_parts() {
  static const std::vector<std::string> parts = [] {
    const std::string dir = test::temp_dir("hostile-parts");
    std::vector<std::string> p;
    for (int k = 0; k < 3; ++k) {
      p.push_back(dir + "/part-" + std::to_string(k) + ".hdy");
      test::make_experiment(p.back(), {"--max-chunks", "3", "--shard", std::to_string(k) + "/3"});
    }
    return p;
  }();
  return parts;
}

}  // namespace

// scancel sends SIGTERM: merge ran to the end and exited 0. Its stderr is a full pipe, so its
// first progress line blocks it mid-merge, deterministically, until the test has sent the
// signal; then the pipe is drained and merge must stop before the next part.
TEST(Hostile, MergeStopsOnSigtermWithNothingWritten) {
  HD_REQUIRE_SHARED();
  const auto& parts = three_parts();
  const std::string out = test::temp_dir("hostile-merge-stop") + "/merged.hdy";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  const std::string filler(4096, 'x');
  while (write(fds[1], filler.data(), filler.size()) > 0) {
  }
  fcntl(fds[1], F_SETFL, 0);
  std::vector<std::string> args = {HD_BINARY, "merge"};
  args.insert(args.end(), parts.begin(), parts.end());
  args.insert(args.end(), {"-o", out});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, HD_BINARY, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  // Blocked in write(2) on its standard error: /proc/PID/syscall starts with write's number
  // on this machine and fd 2.
  const std::string in_write = std::to_string(SYS_write) + " 0x2 ";
  bool blocked = false;
  for (int i = 0; i < 3000 && !blocked; ++i) {
    blocked = test::read_file("/proc/" + std::to_string(pid) + "/syscall").rfind(in_write, 0) == 0;
    if (!blocked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(blocked) << "merge never blocked on its standard error";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping";
  EXPECT_EQ(WEXITSTATUS(status), 130) << err.substr(err.find_first_not_of('x'));
  EXPECT_NE(err.find("stopped: merge wrote nothing"), std::string::npos)
      << err.substr(err.find_first_not_of('x'));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".part")) << "the partial output was left behind";
}

// merge opened every part at once: at the descriptor limit it blamed a valid part ("not a
// heterodyne experiment file"). It keeps one open at a time, and names EMFILE as what it is.
TEST(Hostile, MergeOfMorePartsThanTheDescriptorLimitWorksAndEmfileIsNamed) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("hostile-many-parts");
  constexpr int kParts = 40;  // shards of a 2-chunk run: 38 of them are empty, valid parts
  std::string list;
  for (int k = 0; k < kParts; ++k) {
    const std::string part = dir + "/p" + std::to_string(k) + ".hdy";
    test::make_experiment(part, {"--shard", std::to_string(k) + "/" + std::to_string(kParts)});
    list += " " + part;
  }
  const auto run = [&](int limit, const std::string& out) {
    const std::string cmd = "ulimit -n " + std::to_string(limit) + " && " HD_BINARY " merge" +
                            list + " -o " + out + " 2>" + out + ".err >/dev/null";
    const int status = std::system(("bash -c '" + cmd + "'").c_str());
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::read_file(out + ".err")};
  };
  const auto [code, err] = run(30, dir + "/merged.hdy");
  EXPECT_EQ(code, 0) << err;
  EXPECT_TRUE(fs::exists(dir + "/merged.hdy")) << err;
  // So few descriptors that not even one part opens: the limit is named, not the part.
  const auto [tight_code, tight_err] = run(6, dir + "/tight.hdy");
  EXPECT_EQ(tight_code, 1) << tight_err;
  EXPECT_NE(tight_err.find("Too many open files"), std::string::npos) << tight_err;
  EXPECT_NE(tight_err.find("ulimit -n"), std::string::npos) << tight_err;
  EXPECT_EQ(tight_err.find("not a heterodyne experiment file"), std::string::npos) << tight_err;
}

// The automatic thread count followed the machine's cores under `taskset -c 0` (or Slurm's
// --cpus-per-task): two threads took turns on one CPU.
TEST(Hostile, TheDefaultThreadCountIsTheCpusThisProcessMayRunOn) {
  cpu_set_t was;
  ASSERT_EQ(sched_getaffinity(0, sizeof was, &was), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &was)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int threads = engine::allowed_cpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof was, &was), 0);
  int first = 0;
  while (!CPU_ISSET(first, &one)) ++first;
  EXPECT_EQ(threads, 1);
  EXPECT_EQ(engine::allowed_cpus(), std::min(CPU_COUNT(&was), 16));
  // What a run records as the threads it used, under taskset.
  HD_REQUIRE_SHARED();
  const std::string out = test::temp_dir("hostile-taskset") + "/run.hdy";
  const int status = std::system(("taskset -c " + std::to_string(first) + " " HD_BINARY " diff --a " +
                                  test::shared_path("models/stories260K.gguf") +
                                  " --b-quant Q8_0 -f " + test::shared_path("corpora/tom-sawyer.txt") +
                                  " --chunk 32 --max-chunks 1 --no-floor -o " + out + " 2>/dev/null")
                                     .c_str());
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const auto prov = nlohmann::json::parse(*store::Experiment::open(out, false).meta("provenance"));
  EXPECT_EQ(prov["arms"]["a"]["n_threads_used"], 1) << prov["arms"]["a"].dump();
}

// recommend's held-out check (run/overlap.h): the share of a held-out chunk's tokens inside a
// run of 16 the calibration holds, across its chunk boundaries; a shorter shared run counts
// for nothing.
TEST(HeldOutOverlap, CountsLongRunsAcrossChunkBoundariesAndNothingShorter) {
  std::vector<int32_t> text(400);
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<int32_t>((i * 7919) % 1000);
  const auto slice = [&](size_t from, size_t n) {
    return std::vector<int32_t>(text.begin() + static_cast<ptrdiff_t>(from),
                                text.begin() + static_cast<ptrdiff_t>(from + n));
  };
  // The calibration: text[0, 200) in chunks of 50; the held-out, shifted by one token (as one
  // more space shifts a text), then text no calibration chunk holds, then 10 shared tokens.
  const std::vector<std::vector<int32_t>> calibration = {slice(0, 50), slice(50, 50), slice(100, 50),
                                                         slice(150, 50)};
  std::vector<int32_t> short_run = slice(300, 40);
  std::copy(text.begin() + 60, text.begin() + 70, short_run.begin() + 10);  // 10 tokens only
  const auto shared = run::held_out_overlap(calibration, {slice(1, 60), slice(220, 60), short_run});
  ASSERT_EQ(shared.chunks.size(), 1u);
  EXPECT_EQ(shared.chunks[0].chunk, 0);
  EXPECT_DOUBLE_EQ(shared.chunks[0].share, 1.0);  // all 60 tokens, across the boundaries
  EXPECT_DOUBLE_EQ(shared.share, 60.0 / 160.0);   // of every held-out token
  // Half a chunk shared: half its tokens.
  std::vector<int32_t> half = slice(320, 40);
  std::copy(text.begin() + 10, text.begin() + 30, half.begin());
  const auto h = run::held_out_overlap(calibration, {half});
  ASSERT_EQ(h.chunks.size(), 1u);
  EXPECT_DOUBLE_EQ(h.chunks[0].share, 0.5);
  // Chunks shorter than the run compare runs of half their length, at least 4.
  EXPECT_EQ(run::overlap_run(256), run::kOverlapRun);
  EXPECT_EQ(run::overlap_run(9), 4);
  EXPECT_EQ(run::overlap_run(2), 4);
  const auto small = run::held_out_overlap(calibration, {slice(41, 8), slice(360, 8)}, run::overlap_run(8));
  ASSERT_EQ(small.chunks.size(), 1u);
  EXPECT_DOUBLE_EQ(small.share, 0.5);
}

// slurm's resubmission reads every part: one still being written (its shard still runs) is
// named as such, not resubmitted to be refused as busy, and not called damaged.
TEST(Hostile, APartStillBeingWrittenIsNamedWhenTheRunIsResubmitted) {
  HD_REQUIRE_SHARED();
  const auto& parts = three_parts();
  const std::string copy = test::temp_dir("hostile-busy") + "/part-1-of-3.hdy";
  fs::copy_file(parts[1], copy);
  EXPECT_FALSE(run::part_needs_work(copy, {1, 3}));  // complete and verified
  EXPECT_TRUE(run::part_needs_work(copy + ".missing", {1, 3}));
  EXPECT_THROW(run::part_needs_work(copy, {2, 3}), InputError);  // another shard's file
  const auto writer = store::Experiment::open(copy, true);  // as a running shard holds it
  try {
    run::part_needs_work(copy, {1, 3});
    ADD_FAILURE() << "a part being written was taken as done or to do";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is being written: shard 1/3 still runs"),
              std::string::npos)
        << e.what();
  }
}
