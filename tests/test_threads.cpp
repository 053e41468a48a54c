// Threads change when a result arrives, never what it is (engine/threads.h): the default thread
// count follows the machine's load and the wait policy is set for time alone, so a diff must be
// bitwise the same at every thread count and wait policy: here 1, 2 and 3 threads (more than this
// machine's cores), OpenMP's active and passive waits, with a quantized B under flash attention.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "store/experiment.h"
#include "test_support.h"

using namespace hd;

TEST(Threads, ResultsAreBitwiseTheSameAtEveryThreadCountAndWaitPolicy) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("threads-bitwise");
  const auto run = [&](const std::string& name, const std::string& threads, const char* policy) {
    ::setenv("OMP_WAIT_POLICY", policy, 1);  // the child keeps it: no second start
    std::vector<std::string> args = {
        "diff", "--a", test::shared_path("models/stories260K.gguf"), "--b-quant", "Q4_K_M",
        "--b-fa", "on", "-f", test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
        "--max-chunks", "4", "--components", "-o", dir + "/" + name};
    if (!threads.empty()) args.insert(args.end(), {"-t", threads});
    const auto r = test::run_cli(args);
    ::unsetenv("OMP_WAIT_POLICY");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return dir + "/" + name;
  };
  const std::string base = run("t1-passive.hdy", "1", "passive");
  for (const std::string& other :
       {run("t2-passive.hdy", "2", "passive"), run("t3-passive.hdy", "3", "passive"),
        run("t2-active.hdy", "2", "active"), run("default.hdy", "", "passive")}) {
    const auto a = store::Experiment::open(base, false);
    const auto b = store::Experiment::open(other, false);
    ASSERT_EQ(a.finished_chunks(), b.finished_chunks()) << other;
    for (int c : a.finished_chunks()) {
      const auto x = a.read_chunk(c), y = b.read_chunk(c);
      ASSERT_TRUE(x.floor.has_value()) << "the floor is compared too";
      EXPECT_FALSE(analysis::first_mismatch(x, y).has_value())
          << other << " chunk " << c << ": " << *analysis::first_mismatch(x, y);
      EXPECT_EQ(x.transplants.has_value(), y.transplants.has_value());
    }
  }
}

// Started without a wait policy, heterodyne runs itself again (the same process) with
// OMP_WAIT_POLICY=passive; a policy the user set is kept. Read from /proc/PID/environ of a
// running serve.
TEST(Threads, TheProcessWaitsPassivelyUnlessTheUserChoseAPolicy) {
  const std::string dir = test::temp_dir("threads-policy");
  const auto policy_of = [&](const char* given) {
    ::unsetenv("GOMP_SPINCOUNT");  // it too would keep heterodyne from running itself again
    if (given) ::setenv("OMP_WAIT_POLICY", given, 1);
    else ::unsetenv("OMP_WAIT_POLICY");
    const auto serve = test::start_serve(dir, dir, dir);
    ::unsetenv("OMP_WAIT_POLICY");
    std::string env = test::read_file("/proc/" + std::to_string(serve.pid) + "/environ");
    // Run again from /proc/self/exe, it still goes by its own name (ps, top, pkill).
    EXPECT_EQ(test::read_file("/proc/" + std::to_string(serve.pid) + "/comm"), "heterodyne\n");
    test::stop_serve(serve);
    for (size_t at = 0; at < env.size();) {
      const size_t end = env.find('\0', at);
      const std::string var = env.substr(at, end - at);
      if (var.rfind("OMP_WAIT_POLICY=", 0) == 0) return var.substr(16);
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return std::string("(unset)");
  };
  EXPECT_EQ(policy_of(nullptr), "passive");
  EXPECT_EQ(policy_of("active"), "active");
}
