// heterodyne bisect (docs/bisect.md): the search alone (known answers on made-up outcomes), the
// refusals of bad input, and a constructed history of llama.cpp: the pinned tree committed in a
// small git repository with a build that fails and a one-line change to a CPU kernel planted at
// known commits. Bisect must skip the one, find the other in ⌈log2 n⌉ + 1 probes or fewer and
// name the graph node and ggml op whose values change first; a range that changes no code must
// give "no change", every probe exactly 0. Builds go through ccache: after the first, a probe
// compiles only the files its commit changed.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <fstream>
#include <nlohmann/json.hpp>

#include "errors.h"
#include "kinds/bisect/bisect_search.h"
#include "test_support.h"

using namespace hd;
namespace fs = std::filesystem;
using hd::kinds::bisect::next_step;
using hd::kinds::bisect::Outcome;

namespace {

// A history where the numbers change at `first` (candidates at or after it differ), `broken`
// ones skipped: the probes the search makes and its step at the end.
std::pair<int, kinds::bisect::Step> search(int n, int first, const std::set<int>& broken) {
  std::map<int, Outcome> seen;
  int probes = 0;
  for (;;) {
    const auto s = next_step(n, seen);
    if (s.probe < 0) return {probes, s};
    ++probes;
    seen[s.probe] = broken.count(s.probe) ? Outcome::kSkipped
                    : s.probe >= first    ? Outcome::kDiffers
                                          : Outcome::kSame;
  }
}

// `cmd` in sh -e, its own output discarded (its redirections inside the braces still apply).
int sh(const std::string& cmd) {
  return std::system(("set -e; { " + cmd + "; } >/dev/null 2>&1").c_str());
}

std::string git_out(const std::string& repo, const std::string& args) {
  const std::string out = test::temp_dir("bisect-git-out") + "/out";
  EXPECT_EQ(sh("git -C '" + repo + "' " + args + " > '" + out + "'"), 0) << args;
  std::string s = test::read_file(out);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Commits the work tree with fixed names and dates, so that the history (and its hashes, which
// key the builds and ccache's paths) is the same on every run.
void commit(const std::string& repo, const std::string& subject) {
  ASSERT_EQ(sh("cd '" + repo + "' && git add -A && GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' "
               "GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' git -c user.name=t -c user.email=t@t "
               "commit -q -m '" + subject + "'"),
            0);
}

// The pinned tree (as this build compiled it) in a repository of 8 commits: c0 the tree, c3 a
// build that fails, c4 its fix, c5 the planted change to RMS norm's epsilon; the others change a
// README only. A branch `noload` off c0 cannot load a llama model. Returns the hashes c0..c7.
std::vector<std::string> make_history(const std::string& repo) {
  const std::string src = test::read_file(HD_BINARY_DIR "/llama-source-dir.txt");
  const std::string tree = src.substr(0, src.find('\n'));
  EXPECT_EQ(sh("mkdir -p '" + repo + "' && cd '" + tree + "' && tar --exclude=./.git --exclude=./models "
               "--exclude=./docs --exclude=./benches --exclude='./.heterodyne*' -cf - . | "
               "(cd '" + repo + "' && tar -xf -) && cd '" + repo + "' && git init -q -b master"),
            0);
  const std::string ops = repo + "/ggml/src/ggml-cpu/ops.cpp";
  std::vector<std::string> hashes;
  for (int i = 0; i < 8; ++i) {
    if (i == 3) EXPECT_EQ(sh("echo 'this does not compile' >> '" + ops + "'"), 0);
    if (i == 4) EXPECT_EQ(sh("sed -i '$ d' '" + ops + "'"), 0);
    if (i == 5)
      EXPECT_EQ(sh("sed -i 's|const float scale = 1.0f/sqrtf(mean + eps);|const float scale = "
                   "1.0f/sqrtf(mean + 2*eps);|' '" + ops + "' && grep -q '2\\*eps' '" + ops + "'"),
                0);
    if (i > 0 && i != 3 && i != 5) EXPECT_EQ(sh("echo " + std::to_string(i) + " >> '" + repo + "/README.md'"), 0);
    commit(repo, i == 5 ? "ggml-cpu: rms_norm takes twice the epsilon" : "commit " + std::to_string(i));
    hashes.push_back(git_out(repo, "rev-parse HEAD"));
  }
  EXPECT_EQ(sh("cd '" + repo + "' && git checkout -q -b noload " + hashes[0] +
               " && sed -i 's|{ LLM_ARCH_LLAMA, *\"llama\" *}|{ LLM_ARCH_LLAMA, \"llama-renamed\" }|' "
               "src/llama-arch.cpp && grep -q llama-renamed src/llama-arch.cpp"),
            0);
  commit(repo, "llama-arch: the llama architecture renamed");
  EXPECT_EQ(sh("cd '" + repo + "' && git checkout -q master"), 0);
  return hashes;
}

nlohmann::json shown(const std::string& path) {
  const auto r = test::run_cli({"show", path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("bisect");
}

}  // namespace

TEST(BisectSearch, FindsEveryPlantedChangeWithinLog2ProbesPlusOne) {
  for (int n = 2; n <= 40; ++n) {
    for (int first = 1; first < n; ++first) {
      const auto [probes, s] = search(n, first, {});
      EXPECT_EQ(s.verdict, "found");
      EXPECT_EQ(s.first_bad, first) << n;
      EXPECT_EQ(s.last_same, first - 1);
      EXPECT_LE(probes, kinds::bisect::probes_needed(n)) << n << " " << first;
    }
  }
  EXPECT_EQ(kinds::bisect::probes_needed(8), 4);
  EXPECT_EQ(kinds::bisect::probes_needed(2), 1);
}

TEST(BisectSearch, NoChangeAfterOneProbeAndSkippedOnesBetweenAreSuspects) {
  const auto [probes, s] = search(9, 99, {});
  EXPECT_EQ(probes, 1);
  EXPECT_EQ(s.verdict, "no change");
  // The change at 4, candidate 3 and 4 broken: 4 cannot be told from 3.
  const auto [p2, s2] = search(9, 4, {3, 4});
  EXPECT_EQ(s2.verdict, "ambiguous");
  EXPECT_EQ(s2.suspects, (std::vector<int>{3, 4, 5}));
  // Broken before the change: skipped and still found.
  const auto [p3, s3] = search(8, 5, {3});
  EXPECT_EQ(s3.verdict, "found");
  EXPECT_EQ(s3.first_bad, 5);
}

TEST(BisectSearch, VersionsInSemverOrder) {
  using kinds::bisect::compare_versions;
  EXPECT_LT(compare_versions("3.9.0", "3.10.0"), 0);
  EXPECT_LT(compare_versions("3.0.0-beta.4", "3.0.0-beta.12"), 0);
  EXPECT_LT(compare_versions("3.0.0-beta.44", "3.0.0"), 0);
  EXPECT_EQ(compare_versions("3.21.1", "3.21.1"), 0);
  EXPECT_THROW(compare_versions("3.21", "3.21.1"), InputError);
}

TEST(Bisect, RefusesBadInputInOneLineWritingNothing) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("bisect-refusals");
  const std::string out = dir + "/b.hdy";
  const std::vector<std::string> base = {"bisect", "-m", test::shared_path("models/stories260K.gguf"),
                                         "-f", test::shared_path("corpora/tom-sawyer.txt"), "-o", out};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  {  // no network to the registry: one line, at once, nothing written
    ::setenv("npm_config_registry", "http://127.0.0.1:9/", 1);
    const auto r = test::run_cli(with({"--good", "npm:node-llama-cpp@3.14.0", "--bad", "npm:node-llama-cpp@3.21.1"}));
    ::unsetenv("npm_config_registry");
    test::expect_refusal(r, 2, "the npm registry did not answer", "no registry");
    EXPECT_FALSE(fs::exists(out));
  }
  test::expect_refused(with({"--good", "npm:node-llama-cpp@3.14", "--bad", "npm:node-llama-cpp@3.21.1"}),
                       "--good and --bad are releases");
  // A model or text that cannot be read: at once, before the registry or any build.
  test::expect_refused({"bisect", "-m", dir + "/none.gguf", "-f", base[4], "-o", out, "--good",
                        "npm:node-llama-cpp@3.14.0", "--bad", "npm:node-llama-cpp@3.21.1"},
                       "cannot read");
  test::expect_refused({"bisect", "-m", base[4], "-f", base[4], "-o", out, "--good",
                        "npm:node-llama-cpp@3.14.0", "--bad", "npm:node-llama-cpp@3.21.1"},
                       "is not a GGUF file");
  test::expect_refused({"bisect", "-m", base[2], "-f", dir + "/none.txt", "-o", out, "--good",
                        "npm:node-llama-cpp@3.14.0", "--bad", "npm:node-llama-cpp@3.21.1"},
                       "none.txt");
  test::expect_refused({"bisect", "-m", base[2], "-f", "-", "-o", out, "--good",
                        "npm:node-llama-cpp@3.14.0", "--bad", "npm:node-llama-cpp@3.21.1"},
                       "give it as a file");
  const auto listed = test::run_cli({"bisect", "--dry-run", "-m", base[2], "-f", base[4], "--good",
                                     "npm:node-llama-cpp@3.20.0", "--bad", "npm:node-llama-cpp@3.21.1"});
  if (listed.exit_code != 0) GTEST_SKIP() << "the npm registry is not reachable here: " << listed.err;
  EXPECT_NE(listed.out.find("  0  3.20.0"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("3.21.1         llama.cpp "), std::string::npos) << listed.out;
  test::expect_refused(with({"--good", "npm:node-llama-cpp@3.99.0", "--bad", "npm:node-llama-cpp@3.21.1"}),
                       "is not a release the npm registry lists");
  test::expect_refused(with({"--good", "npm:node-llama-cpp@3.21.1", "--bad", "npm:node-llama-cpp@3.21.1"}),
                       "are the same release");
  test::expect_refused(with({"--good", "npm:node-llama-cpp@3.21.1", "--bad", "npm:node-llama-cpp@3.14.0"}),
                       "is newer than --bad");
  EXPECT_FALSE(fs::exists(out));
}

TEST(Bisect, ConstructedHistoryFindsThePlantedKernelChangeAndSkipsTheBrokenBuild) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("bisect-history");
  const std::string repo = dir + "/llama.cpp";
  const std::vector<std::string> c = make_history(repo);
  ASSERT_EQ(c.size(), 8u);
  const std::string model = test::shared_path("models/stories260K.gguf");
  const auto bisect = [&](const std::string& good, const std::string& bad, const std::string& out) {
    return test::run_cli({"bisect", "-m", model, "-f", test::shared_path("corpora/tom-sawyer.txt"),
                          "--chunk", "64", "--max-chunks", "2", "--llama-src", repo, "--good", good,
                          "--bad", bad, "-o", out});
  };
  // Code that does not change: no change, every probe exactly 0 against a bitwise floor.
  const auto same = bisect(c[0], c[2], dir + "/same.hdy");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const auto s = shown(dir + "/same.hdy");
  EXPECT_EQ(s.at("verdict"), "no change");
  ASSERT_EQ(s.at("probes").size(), 1u);
  for (const auto& p : s["probes"]) {
    EXPECT_EQ(p.at("outcome"), "same");
    EXPECT_TRUE(p.at("figures").at("bitwise_identical").get<bool>());
    EXPECT_EQ(p["figures"].at("kl_mean").get<double>(), 0.0);
    EXPECT_EQ(p["figures"].at("flips").get<int>(), 0);
  }
  // The planted change, with a broken build on the way.
  const auto found = bisect(c[0], c[7], dir + "/found.hdy");
  ASSERT_EQ(found.exit_code, 0) << found.err;
  const auto f = shown(dir + "/found.hdy");
  EXPECT_EQ(f.at("verdict"), "found");
  EXPECT_EQ(f.at("first_bad").at("commit"), c[5]);
  EXPECT_EQ(f.at("first_bad").at("subject"), "ggml-cpu: rms_norm takes twice the epsilon");
  EXPECT_EQ(f.at("last_same").at("commit"), c[4]);
  EXPECT_LE(f.at("probes").size(), 4u);  // ⌈log2 8⌉ + 1
  bool skipped = false;
  for (const auto& p : f["probes"]) {
    if (p.at("candidate") == 3) {
      skipped = true;
      EXPECT_EQ(p.at("outcome"), "skipped");
      EXPECT_NE(p.at("reason").get<std::string>().find("does not build"), std::string::npos);
    }
    if (p.at("outcome") == "differs") EXPECT_GT(p.at("figures").at("kl_mean").get<double>(), 0.0);
  }
  EXPECT_TRUE(skipped) << f.at("probes").dump();
  const auto& op = f.at("op");
  // RMS norm's own output (norm-0) is a name llama's graph gives the attention's and the MLP's
  // norm alike, so no hook can read it: the first node compared that differs is the MUL by the
  // norm's weight right after it, and norm-0 is named as where it may begin.
  EXPECT_EQ(op.at("first_node").at("name"), "attn_norm-0") << op.dump();
  EXPECT_EQ(op.at("first_node").at("op"), "MUL");
  ASSERT_EQ(op["first_node"].at("uncompared_before").size(), 1u) << op.dump();
  EXPECT_EQ(op["first_node"]["uncompared_before"][0].at("name"), "norm-0");
  EXPECT_EQ(op["first_node"]["uncompared_before"][0].at("op"), "RMS_NORM");
  EXPECT_EQ(op.at("last_same_tap"), "inp_embd");
  EXPECT_TRUE(op.at("decode").at("differs").get<bool>());
  const auto text = test::run_cli({"show", dir + "/found.hdy"});
  EXPECT_NE(text.out.find("first that differs: " + c[5].substr(0, 12)), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("in norm-0 (ggml op RMS_NORM)"), std::string::npos) << text.out;
  const auto v = test::run_cli({"verify", dir + "/found.hdy"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  const auto rows = test::run_cli({"export", dir + "/found.hdy", "--format", "jsonl"});
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_EQ(static_cast<size_t>(std::count(rows.out.begin(), rows.out.end(), '\n')), f["probes"].size());
  EXPECT_NE(rows.out.find("\"outcome\":\"skipped\""), std::string::npos) << rows.out;

  // Ctrl-C once the file appears (after its first probe): the probes stored are kept, the one in
  // flight is not recorded as a failure, and --resume ends on the same answer.
  {
    const std::string cut = dir + "/cut.hdy";
    const pid_t pid = test::spawn_cli({"bisect", "-m", model, "-f", test::shared_path("corpora/tom-sawyer.txt"),
                                       "--chunk", "64", "--max-chunks", "2", "--llama-src", repo,
                                       "--good", c[0], "--bad", c[7], "-o", cut},
                                      "/dev/null", dir + "/cut.err");
    // With every build cached, three probes and the op search remain when the file appears.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
    int status = 0;
    bool ended = false;
    while (!fs::exists(cut) && std::chrono::steady_clock::now() < deadline) {
      if ((ended = ::waitpid(pid, &status, WNOHANG) == pid)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!ended) {
      ::kill(pid, SIGINT);
      ::waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(WIFEXITED(status)) << test::read_file(dir + "/cut.err");
    EXPECT_EQ(WEXITSTATUS(status), 130) << test::read_file(dir + "/cut.err");
    const auto resumed = test::run_cli({"bisect", "--resume", cut});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const auto r = shown(cut);
    EXPECT_EQ(r.at("first_bad").at("commit"), c[5]);
    EXPECT_EQ(r.at("probes").size(), f.at("probes").size());
    for (const auto& p : r["probes"]) {
      if (p.at("candidate") != 3) EXPECT_NE(p.at("outcome"), "skipped") << p.dump();
    }
  }

  // Refusals that need the history: the ends swapped, a revision it does not have, a bad build
  // that cannot load the model (which build, and llama.cpp's reason).
  test::expect_refused({"bisect", "-m", model, "-f", test::shared_path("corpora/tom-sawyer.txt"),
                        "--llama-src", repo, "--good", c[7], "--bad", c[0], "-o", dir + "/x.hdy"},
                       "is not an ancestor of --bad");
  test::expect_refused({"bisect", "-m", model, "-f", test::shared_path("corpora/tom-sawyer.txt"),
                        "--llama-src", repo, "--good", "no-such-rev", "--bad", c[0], "-o", dir + "/x.hdy"},
                       "names no commit of the --llama-src checkout");
  // Found only once both are built: progress first, then the one line of the refusal.
  const auto noload = bisect(c[0], "noload", dir + "/noload.hdy");
  EXPECT_EQ(noload.exit_code, 2) << noload.err;
  const std::string last = noload.err.substr(noload.err.rfind("heterodyne: error: "));
  EXPECT_NE(last.find(") cannot run the model: llama.cpp could not load"), std::string::npos) << last;
  EXPECT_EQ(last.rfind("heterodyne: error: the bad build (", 0), 0u) << last;
  EXPECT_FALSE(fs::exists(dir + "/noload.hdy"));
  EXPECT_FALSE(fs::exists(dir + "/x.hdy"));
}
