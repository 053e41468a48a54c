// The GitHub Action's script (scripts/gate-action.sh) as a runner would run it: job summary,
// step outputs and exit code, on a tiny-llama reference. The build step is skipped by naming
// the binary the tests use (HETERODYNE_BIN); action.yml must call this script.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "test_support.h"

namespace {

struct ActionRun {
  int exit_code;
  std::string summary, outputs;
};

ActionRun run_action(const std::string& dir, const std::string& args) {
  const std::string summary = dir + "/summary.md", outputs = dir + "/outputs.txt";
  hd::test::write_file(summary, "");
  hd::test::write_file(outputs, "");
  const std::string cmd = "HETERODYNE_BIN=" HD_BINARY " HD_REFERENCE=" + dir +
                          "/ref HD_MODEL=" + dir + "/m.gguf HD_ARGS='" + args +
                          "' GITHUB_STEP_SUMMARY=" + summary + " GITHUB_OUTPUT=" + outputs +
                          " RUNNER_TEMP=" + dir + " " HD_SOURCE_DIR "/scripts/gate-action.sh 2>/dev/null";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, hd::test::read_file(summary),
          hd::test::read_file(outputs)};
}

}  // namespace

TEST(Action, ScriptWritesTheSummaryAndOutputsAndPassesTheExitCode) {
  const std::string action = hd::test::read_file(HD_SOURCE_DIR "/action.yml");
  EXPECT_NE(action.find("using: composite"), std::string::npos);
  EXPECT_NE(action.find("scripts/gate-action.sh"), std::string::npos);

  const std::string dir = hd::test::temp_dir("action");
  ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o",
                               dir + "/m.gguf"})
                .exit_code,
            0);
  hd::test::write_file(dir + "/g.txt", "The golden text a pull request must not move.");
  ASSERT_EQ(hd::test::run_cli({"capture", "-m", dir + "/m.gguf", "-f", dir + "/g.txt", "-o",
                               dir + "/ref"})
                .exit_code,
            0);
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", dir + "/ref"}).exit_code, 0);

  const ActionRun pass = run_action(dir, "");
  EXPECT_EQ(pass.exit_code, 0);
  EXPECT_NE(pass.summary.find("### heterodyne check: passed"), std::string::npos) << pass.summary;
  EXPECT_NE(pass.outputs.find("passed=true\n"), std::string::npos) << pass.outputs;
  EXPECT_NE(pass.outputs.find("report=" + dir + "/heterodyne-check.json"), std::string::npos);

  const ActionRun fail = run_action(dir, "-ctk q8_0 --per-head");
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_NE(fail.summary.find("First divergent tap: **`kqv_out-0`**"), std::string::npos)
      << fail.summary;
  EXPECT_NE(fail.summary.find("first layer with a divergent head: kqv_out-0"), std::string::npos);
  EXPECT_NE(fail.outputs.find("passed=false\nfirst-divergent-tap=kqv_out-0\n"), std::string::npos)
      << fail.outputs;

  const ActionRun bad = run_action(dir, "-ctk q9_9");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.summary.find("could not run (exit 2)"), std::string::npos) << bad.summary;
  EXPECT_NE(bad.outputs.find("passed=false"), std::string::npos);
}
