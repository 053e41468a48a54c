// heterodyne slurm on a real Slurm: Debian's munged, slurmctld and slurmd started for the
// suite on one host (scripts/slurm-cluster: loopback, state under a temporary folder, stopped
// by pid). Sharded runs submitted as job arrays merge into files bitwise equal to the single
// process's, verify, and a shard cancelled mid-run resumes when the command is run again.
// Without the Slurm packages the cluster tests say so and skip (.ci/run installs them).
#include <gtest/gtest.h>

#include <signal.h>

#include <cctype>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "demo/demo_model.h"
#include "common/shell_quote.h"
#include "errors.h"
#include "harness.h"
#include "run/slurm_jobs.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd;
namespace fs = std::filesystem;

namespace {

// What a shell command prints on stdout.
std::string output_of(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  return out;
}

bool slurm_installed() {
  return std::system("{ command -v munged && command -v slurmctld && command -v slurmd && "
                     "command -v sbatch; } > /dev/null 2>&1") == 0;
}

// The suite's cluster: started on first use, stopped when the test process exits.
struct Cluster {
  std::string dir;
  bool up = false;
  Cluster() {
    if (!slurm_installed()) return;
    dir = test::temp_dir("slurm-cluster");
    const std::string started = output_of("scripts/slurm-cluster start " + dir + " 2>&1");
    const std::string conf = dir + "/slurm.conf";
    up = started.find("SLURM_CONF=" + conf) != std::string::npos;
    EXPECT_TRUE(up) << started;
    for (const char* d : {"slurmd", "slurmctld", "munged"}) {
      const std::string pid = test::read_file(dir + "/" + d + ".pid");
      if (!pid.empty()) pids.push_back(std::stoi(pid));
    }
    setenv("SLURM_CONF", conf.c_str(), 1);
  }
  // By the pids read at start: the folder may be gone by now.
  ~Cluster() {
    for (int pid : pids) kill(pid, SIGTERM);
  }
  std::vector<int> pids;
};

const Cluster& cluster() {
  static const Cluster c;
  return c;
}

#define REQUIRE_CLUSTER()                                                                 \
  do {                                                                                    \
    HD_REQUIRE_SHARED();                                                                  \
    if (!slurm_installed())                                                               \
      GTEST_SKIP() << "Slurm (slurmctld, slurmd, slurm-client, munge) is not installed: " \
                      "scripts/install-deps.sh installs it; skipping";                    \
    ASSERT_TRUE(cluster().up) << "the test cluster did not start (" << cluster().dir      \
                              << "/log)";                                                 \
  } while (0)

// The job ids `heterodyne slurm` printed: the array's, then the merge's.
std::vector<std::string> job_ids(const std::string& out) {
  std::vector<std::string> ids;
  const std::regex re("submitted job ([0-9]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it)
    ids.push_back((*it)[1]);
  return ids;
}

// Waits until none of `ids` is queued or running (at most `seconds`); true when they left.
bool wait_for(const std::vector<std::string>& ids, int seconds) {
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (output_of("squeue -h -o %i -j " + list + " 2>/dev/null").empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// `diff_args` (no -o) run as one process into `whole`, then as `shards` Slurm shards into
// `merged`; the two hold the same rows and the merged file verifies.
void expect_slurm_run_is_the_single_run(const std::vector<std::string>& diff_args, int shards,
                                        const std::string& whole, const std::string& merged) {
  const auto one = test::run_cli(with(diff_args, {"-o", whole}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> slurm = {"slurm"};
  slurm = with(with(slurm, diff_args), {"--shards", std::to_string(shards), "-o", merged});
  const auto r = test::run_cli(slurm);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ids = job_ids(r.out);
  ASSERT_EQ(ids.size(), 2u) << r.out;
  ASSERT_TRUE(wait_for(ids, 600)) << "the jobs did not finish in 10 minutes";
  ASSERT_TRUE(fs::exists(merged)) << test::read_file(merged + ".parts/logs/merge.log");
  test::expect_same_rows(whole, merged);
  EXPECT_EQ(store::Experiment::open(merged, false).meta("sweep"),
            store::Experiment::open(whole, false).meta("sweep"));  // a sweep's summary
  const auto v = test::run_cli({"verify", merged});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  // Every part's Slurm job and array task is recorded.
  const auto prov =
      nlohmann::json::parse(*store::Experiment::open(merged, false).meta("provenance"));
  ASSERT_EQ(prov["parts"].size(), static_cast<size_t>(shards));
  for (int k = 0; k < shards; ++k) {
    const auto& slurm_facts = prov["parts"][k]["placement"]["slurm"];
    EXPECT_EQ(slurm_facts["array_task_id"], std::to_string(k));
    EXPECT_EQ(slurm_facts["array_job_id"], ids[0]);
  }
}

std::vector<std::string> stories_args() {
  return {"diff", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant", "Q8_0", "-f",
          test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64", "--max-chunks", "10",
          "--components"};
}

std::vector<std::string> slurm_args() { return with({"slurm"}, stories_args()); }

}  // namespace

TEST(Slurm, ShardsOfStories260KMergeToTheSingleProcessRunBitwise) {
  REQUIRE_CLUSTER();
  const std::string dir = test::temp_dir("slurm-stories");
  expect_slurm_run_is_the_single_run(stories_args(), 4, dir + "/whole.hdy", dir + "/run.hdy");
}

TEST(Slurm, ShardsOfTheDemoModelMergeToTheSingleProcessRunBitwise) {
  REQUIRE_CLUSTER();
  const demo::DemoModel d = demo::ensure_demo_model(demo::DemoSettings{}, [](const std::string&) {});
  const std::string dir = test::temp_dir("slurm-demo");
  expect_slurm_run_is_the_single_run({"diff", "--a", d.model_path, "--b-quant", "Q4_K_M", "-f",
                                      d.held_out_path, "--chunk", "128", "--max-chunks", "6",
                                      "--transplants"},
                                     3, dir + "/whole.hdy", dir + "/run.hdy");
}

TEST(Slurm, ShardsOfASweepMergeToTheSingleSweep) {
  REQUIRE_CLUSTER();
  const std::string dir = test::temp_dir("slurm-sweep");
  expect_slurm_run_is_the_single_run(
      {"sweep", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant", "Q8_0", "--b-ub",
       "16", "-f", test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64", "--max-chunks",
       "6"},
      3, dir + "/whole.hdy", dir + "/sweep.hdy");
}

// scancel of a shard mid-run: it stops after the chunk in flight, the merge never runs, and the
// same command run again resubmits the array; the cancelled part resumes (its stored chunks
// kept), the others are complete already, and the merged file is the single run's.
TEST(Slurm, AShardCancelledMidRunResumesOnResubmission) {
  REQUIRE_CLUSTER();
  const std::string dir = test::temp_dir("slurm-cancel");
  const std::string model = dir + "/tiny-llama-f16.gguf";  // 32000 tokens: a chunk takes a while
  ASSERT_EQ(test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", model})
                .exit_code, 0);
  const std::vector<std::string> args = {"diff", "--a", model, "--b-quant", "Q4_0", "-f",
                                         test::shared_path("corpora/tom-sawyer.txt"), "--chunk",
                                         "64", "--max-chunks", "12", "--components", "-t", "2"};
  const std::string whole = dir + "/whole.hdy", merged = dir + "/run.hdy";
  const auto one = test::run_cli(with(args, {"-o", whole}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto slurm = with(with({"slurm"}, args), {"--shards", "2", "-o", merged});
  const auto first = test::run_cli(slurm);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto ids = job_ids(first.out);
  ASSERT_EQ(ids.size(), 2u) << first.out;
  const std::string part = merged + ".parts/part-0-of-2.hdy";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (test::stored_chunks(part) < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(std::system(("scancel " + ids[0] + "_0").c_str()), 0);
  ASSERT_TRUE(wait_for(ids, 300));
  const int kept = test::stored_chunks(part);
  EXPECT_GE(kept, 1);
  EXPECT_LT(kept, 6) << "the shard finished before it was cancelled";
  EXPECT_FALSE(fs::exists(merged)) << "the merge ran without every shard";

  const auto again = test::run_cli(slurm);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto ids2 = job_ids(again.out);
  ASSERT_EQ(ids2.size(), 2u) << again.out;
  ASSERT_TRUE(wait_for(ids2, 600));
  ASSERT_TRUE(fs::exists(merged)) << test::read_file(merged + ".parts/logs/merge.log");
  test::expect_same_rows(whole, merged);
  const auto prov =
      nlohmann::json::parse(*store::Experiment::open(merged, false).meta("provenance"));
  ASSERT_EQ(prov["parts"][0]["resumed"].size(), 1u);
  EXPECT_EQ(prov["parts"][0]["resumed"][0]["placement"]["slurm"]["array_job_id"], ids2[0]);
  EXPECT_FALSE(prov["parts"][1].contains("resumed"));  // it had finished: run again, no work
  // The same output with other flags would mix two runs' parts: refused without --force.
  test::expect_refused(slurm, "already exists");
  fs::remove(merged);
  test::expect_refused(with(with({"slurm"}, args), {"--no-floor", "--shards", "2", "-o", merged}),
                       "holds the jobs of another run");
  EXPECT_EQ(test::stored_chunks(part), 6);
}

TEST(Slurm, DryRunPrintsTheScriptsAndWritesNothing) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("slurm-dry");
  const std::string out = dir + "/run.hdy";
  const auto r = test::run_cli(with(slurm_args(), {"--shards", "3", "--gres", "gpu:1",
                                                     "--partition", "p", "--dry-run", "-o", out}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t merge = r.out.find("merge.sbatch");
  ASSERT_NE(merge, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#SBATCH --array=0-2"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("#SBATCH \"--gres=gpu:1\""), merge) << "the merge needs no GPU";
  EXPECT_EQ(r.out.find("--gres", merge), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#SBATCH \"--partition=p\"", merge), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--shard \"$SLURM_ARRAY_TASK_ID/3\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/run.hdy.parts/part-2-of-3.hdy"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out + ".parts"));
}

TEST(Slurm, BadRequestsAreRefusedBeforeAnythingIsSubmitted) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("slurm-bad");
  const std::string out = dir + "/run.hdy";
  const auto args = slurm_args();
  test::expect_refused(with(args, {"-o", out}), "slurm needs --shards N");
  test::expect_refused(with(args, {"--shards", "0", "-o", out}), "from 1 to 100000");
  test::expect_refused(with(args, {"--shards", "20001", "-o", out}), "--shards 20001: at most 20000");
  test::expect_refused(with(args, {"--shards", "2"}), "slurm needs -o");
  test::expect_refused(with(args, {"--shards", "2", "--shard", "0/2", "-o", out}),
                       "heterodyne slurm sets it");
  test::expect_refused(with(args, {"--shards", "2", "--bogus", "-o", out}), "diff: ");
  test::expect_refused({"slurm", "floor", "-m", "m.gguf", "--shards", "2", "-o", out},
                       "heterodyne slurm runs a diff, a sweep or a generate");
  test::expect_refused({"slurm", "diff", "--a", test::shared_path("models/stories260K.gguf"),
                        "--b-quant", "Q8_0", "-f", "-", "--shards", "2", "-o", out},
                       "no standard input");
  test::expect_refused(with(args, {"--shards", "2", "--partition", "a\nb", "-o", out}),
                       "holds a line break");
  test::expect_refused(with(args, {"--shards", "2", "--sbatch-arg=--comment=HetJob", "-o", out}),
                       "heterogeneous job");
  test::write_file(out, "x");
  test::expect_refused(with(args, {"--shards", "2", "--dry-run", "-o", out}), "already exists");
  EXPECT_FALSE(fs::exists(out + ".parts"));
}

using hd::fuzz::sbatch_words;  // sbatch's own reading of a line, written again from its source

// Every character class sbatch treats specially comes back as it was given: isspace() of every
// kind (\v and \f made a second option that won), '#' (cut the value: -o a#b.hdy logged to
// 'a'), quotes (an unmatched one made sbatch exit), backslashes; what no line can carry is
// refused with the value named.
TEST(SlurmScript, EveryValueIsOneWordAsSbatchReadsIt) {
  for (const std::string v :
       {"plain", "a b", "a\tb", "a\vb", "a\fb", "p#x", "a#b.hdy", "it's", "say \"hi\"",
        "back\\slash\\", "100%", "\"", "'", "#", "  lead and trail  ", "--comment=x # y",
        "ünïcödé"}) {
    const std::string line = "#SBATCH " + run::sbatch_word("the value", v);
    const auto words = sbatch_words(line);
    ASSERT_TRUE(words.has_value()) << line;
    ASSERT_EQ(words->size(), 1u) << line;
    EXPECT_EQ(words->front(), v) << line;
    // The old writer's line: the value as it was, checked only for space, tab, CR and LF.
    if (v.find_first_of(" \t\r\n") == std::string::npos && v != "plain" && v != "100%" &&
        v != "ünïcödé") {
      const auto old = sbatch_words("#SBATCH " + v);
      EXPECT_TRUE(!old || old->size() != 1 || old->front() != v) << "needs no quoting: " << v;
    }
  }
  for (const std::string& v : std::vector<std::string>{"a\nb", "a\rb", std::string("a\0b", 3), "--comment=HETJOB", "packjob"}) {
    EXPECT_THROW(run::sbatch_word("the value", v), InputError) << v;
  }
  EXPECT_EQ(run::slurm_file_pattern("p", "/a%b/%%c"), "/a%%b/%%%%c");
  EXPECT_THROW(run::slurm_file_pattern("p", "/a\\b"), InputError);
}

// A run is its command lines: the same run with other scheduling keeps its parts.
TEST(SlurmScript, SchedulingIsNotPartOfTheRun) {
  run::SlurmPlan p;
  p.heterodyne = "/bin/heterodyne";
  p.command = "diff";
  p.args = {"--a", "/m.gguf", "--b-quant", "Q8_0", "-f", "/t.txt"};
  p.shards = 4;
  p.out = "/o/run.hdy";
  p.workdir = "/o";
  run::SlurmPlan later = p;
  later.sbatch = {"--time=4:00:00", "--partition=long", "--exclusive"};
  later.shard_only = {"--gres=gpu:2"};
  EXPECT_NE(run::shards_script(p), run::shards_script(later));
  EXPECT_EQ(run::run_lines(run::shards_script(p)), run::run_lines(run::shards_script(later)));
  run::SlurmPlan other = p;
  other.args.push_back("--components");
  EXPECT_NE(run::run_lines(run::shards_script(p)), run::run_lines(run::shards_script(other)));
  // The CPUs a task gets set its default thread count: another run, whatever else stays.
  run::SlurmPlan cpus = p;
  cpus.shard_only = {"--cpus-per-task=4"};
  EXPECT_NE(run::run_lines(run::shards_script(p)), run::run_lines(run::shards_script(cpus)));
  // Only the header is scheduling: an #SBATCH text further down (in a quoted argument) is not.
  EXPECT_NE(run::run_lines("#!/bin/bash\n#SBATCH -t 1\nexec x '\n#SBATCH a'\n"),
            run::run_lines("#!/bin/bash\n#SBATCH -t 1\nexec x '\n#SBATCH b'\n"));
}

// On the real sbatch and slurmd: a working folder and an output whose names hold space, '#',
// '%' and quotes, an sbatch option holding \v, \f, '#', quotes and '\', and relative model and
// text paths. The job's WorkDir and Comment are the values given, the logs land in the parts
// folder, the shards read the files by absolute paths, and the merged file appears.
TEST(Slurm, ValuesWithEveryCharacterClassReachSlurmWhole) {
  REQUIRE_CLUSTER();
  const std::string dir = test::temp_dir("slurm-chars") + "/w d#1%a'q\"x";
  fs::create_directories(dir);
  fs::copy_file(test::shared_path("models/stories260K.gguf"), dir + "/m.gguf");
  fs::copy_file(test::shared_path("corpora/tom-sawyer.txt"), dir + "/t.txt");
  const std::string comment = "a\vb\fc#d'e\"f\\g%h i";
  const fs::path was = fs::current_path();
  fs::current_path(dir);  // relative paths start here, as a user's would
  const auto r = test::run_cli({"slurm", "diff", "--a", "m.gguf", "--b-quant", "Q8_0", "-f",
                                "t.txt", "--chunk", "64", "--max-chunks", "2", "--shards", "2",
                                "--sbatch-arg=--hold", "--sbatch-arg=--comment=" + comment, "-o",
                                "run.hdy"});
  fs::current_path(was);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ids = job_ids(r.out);
  ASSERT_EQ(ids.size(), 2u) << r.out;
  const std::string job = output_of("scontrol show job -o " + ids[0] + " 2>&1");
  EXPECT_NE(job.find(" WorkDir=" + dir + " "), std::string::npos) << job;
  EXPECT_NE(job.find(" Comment=" + comment + " "), std::string::npos) << job;
  const std::string script = test::read_file(dir + "/run.hdy.parts/shards.sbatch");
  EXPECT_NE(script.find(hd::shell_quote(dir + "/m.gguf")), std::string::npos) << script;
  EXPECT_NE(script.find(hd::shell_quote(dir + "/t.txt")), std::string::npos) << script;
  ASSERT_EQ(std::system(("scontrol release " + ids[0] + " " + ids[1]).c_str()), 0);
  ASSERT_TRUE(wait_for(ids, 300));
  EXPECT_TRUE(fs::exists(dir + "/run.hdy.parts/logs/shard-0.log"));
  EXPECT_TRUE(fs::exists(dir + "/run.hdy.parts/logs/shard-1.log"));
  EXPECT_TRUE(fs::exists(dir + "/run.hdy")) << test::read_file(dir + "/run.hdy.parts/logs/merge.log");
  // A partition with '#' reaches sbatch whole (it was cut to 'p'): sbatch names it.
  const auto p = test::run_cli(with(slurm_args(), {"--shards", "2", "--partition", "p#x", "-o",
                                                   dir + "/p.hdy"}));
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("invalid partition specified: p#x"), std::string::npos) << p.err;
}

// After a TIMEOUT the user raises --time: the same run, so the complete part is kept (--force
// used to be the only way on, and it deleted every finished part), only the shard with work
// left is submitted, and once every part is complete only the merge is.
TEST(Slurm, OtherSchedulingFlagsKeepFinishedPartsAndResubmitOnlyWhatIsMissing) {
  REQUIRE_CLUSTER();
  const std::string dir = test::temp_dir("slurm-time");
  const std::string out = dir + "/run.hdy", parts = out + ".parts";
  const auto args = with(stories_args(), {"--shards", "2"});
  const auto first = test::run_cli(with(with({"slurm"}, args), {"-o", out}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(wait_for(job_ids(first.out), 600));
  ASSERT_TRUE(fs::exists(out)) << test::read_file(parts + "/logs/merge.log");
  // As a timed-out shard 1 leaves it: no part 1, no merged file.
  fs::remove(out);
  fs::remove(parts + "/part-1-of-2.hdy");
  const auto kept = fs::last_write_time(parts + "/part-0-of-2.hdy");
  const auto again =
      test::run_cli(with(with({"slurm"}, args), {"--time", "30:00", "--partition", "debug", "-o", out}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("shards 1 of 2 (the others are complete)"), std::string::npos)
      << again.out;
  ASSERT_TRUE(wait_for(job_ids(again.out), 600));
  ASSERT_TRUE(fs::exists(out)) << test::read_file(parts + "/logs/merge.log");
  EXPECT_EQ(fs::last_write_time(parts + "/part-0-of-2.hdy"), kept) << "a finished part was touched";
  EXPECT_NE(test::read_file(parts + "/shards.sbatch").find("--time=30:00"), std::string::npos);
  const auto v = test::run_cli({"verify", out});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  // Every part complete: only the merge runs.
  fs::remove(out);
  const auto merge_only = test::run_cli(with(with({"slurm"}, args), {"-o", out}));
  ASSERT_EQ(merge_only.exit_code, 0) << merge_only.err;
  EXPECT_NE(merge_only.out.find("every part of the 2 shards is complete and verified"),
            std::string::npos)
      << merge_only.out;
  ASSERT_TRUE(wait_for(job_ids(merge_only.out), 300));
  EXPECT_TRUE(fs::exists(out)) << test::read_file(parts + "/logs/merge.log");
  // A part changed after it was sealed is named before anything is submitted.
  fs::remove(out);
  test::sql(parts + "/part-1-of-2.hdy", "UPDATE positions SET kl = kl * 2 WHERE pos = 3");
  test::expect_refused(with(with({"slurm"}, args), {"-o", out}), "changed after it was sealed");
}

TEST(Slurm, StandardInputIsRefusedNamingTheFlagThatAskedForIt) {
  HD_REQUIRE_SHARED();
  const std::string out = test::temp_dir("slurm-stdin") + "/run.hdy";
  const std::vector<std::string> base = {"slurm", "diff", "--a",
                                         test::shared_path("models/stories260K.gguf"),
                                         "--b-quant", "Q8_0", "--shards", "2", "-o", out};
  test::expect_refused(with(base, {"--tokens", "-"}), "give --tokens FILE");
  test::expect_refused(with(base, {"-f", "-"}), "give -f FILE");
}
