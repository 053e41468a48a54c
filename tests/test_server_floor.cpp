// The deployment floor (kinds/server_floor): a plain arm is its own floor (exactly 0: the same
// request alone is bitwise reproducible); a server arm whose slots put the text through the
// one-row kernels moves every position; the file shows, verifies, resumes and is refused when
// asked for no trials.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.h"

namespace fs = std::filesystem;
using hd::test::run_cli;

namespace {

std::vector<std::string> floor_args(const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"server-floor", "-m", hd::test::shared_path("models/stories260K.gguf"),
                                   "-f", hd::test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                   "--max-chunks", "3", "-t", "1", "--trials", "3", "-o", out};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST(ServerFloor, APlainArmIsExactlyItsOwnFloor) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("server-floor-plain");
  const std::string out = dir + "/plain.hdy";
  const auto made = run_cli(floor_args(out, {}));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(hd::test::rows_text(out, "select count(*) from server_floor_positions where kl_max <> 0 "
                                     "or flips <> 0 or varies <> 0"),
            hd::test::rows_text(out, "select 0"));
  EXPECT_EQ(hd::test::rows_text(out, "select count(*) from server_floor_positions"),
            hd::test::rows_text(out, "select 189"));
  const auto shown = run_cli({"show", out});
  EXPECT_NE(shown.out.find("the plain arm itself"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("0 of 189 positions"), std::string::npos) << shown.out;
}

TEST(ServerFloor, OneRowKernelsMoveEveryPositionAndTheFileVerifiesAndResumes) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("server-floor-slots");
  const std::string out = dir + "/slots.hdy";
  const auto made = run_cli(floor_args(out, {"--slots", "4", "--neighbours", "3", "--ub", "7"}));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(hd::test::rows_text(out, "select count(*) from server_floor_positions where kl_max = 0"),
            hd::test::rows_text(out, "select 0"));
  const auto shown = run_cli({"show", out});
  EXPECT_NE(shown.out.find("--slots 4 --neighbours 3 against -np 1"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("greedy token depends on what else the server is doing"), std::string::npos);
  EXPECT_NE(shown.out.find("differs from -np 1 alone"), std::string::npos);
  EXPECT_EQ(shown.out.find("nan"), std::string::npos) << shown.out;
  const auto verified = run_cli({"verify", out});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;

  const std::string cut = dir + "/cut.hdy";
  fs::copy_file(out, cut);
  hd::test::sql(cut, "DELETE FROM server_floor_positions WHERE chunk = 2; DELETE FROM meta WHERE "
                     "key IN ('integrity_sha256', 'server-floor'); UPDATE meta SET value = "
                     "'running' WHERE key = 'status'");
  const auto resumed = run_cli({"server-floor", "--resume", cut});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string all = "select * from server_floor_positions order by chunk, pos";
  EXPECT_EQ(hd::test::rows_text(cut, all), hd::test::rows_text(out, all));
  EXPECT_EQ(run_cli({"show", cut}).out, shown.out);

  // A changed row fails the integrity check; a row no KL can be is damage.
  hd::test::sql(cut, "UPDATE server_floor_positions SET kl_mean = kl_mean * 2 WHERE chunk = 0 AND pos = 3");
  const auto damaged = run_cli({"verify", cut});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_NE(damaged.err.find("integrity check failed"), std::string::npos) << damaged.err;
  const std::string broken = dir + "/broken.hdy";
  fs::copy_file(out, broken);
  hd::test::sql(broken, "UPDATE server_floor_positions SET kl_mean = -1 WHERE chunk = 0 AND pos = 3; "
                        "DELETE FROM meta WHERE key IN ('integrity_sha256', 'server-floor'); UPDATE "
                        "meta SET value = 'running' WHERE key = 'status'");
  const auto refused = run_cli({"server-floor", "--resume", broken});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("server_floor_positions has a row that is not"), std::string::npos)
      << refused.err;
}

TEST(ServerFloor, NoTrialsIsRefusedAndNothingIsWritten) {
  HD_REQUIRE_SHARED();
  const std::string dir = hd::test::temp_dir("server-floor-refused");
  const std::string out = dir + "/none.hdy";
  auto args = floor_args(out, {});
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--trials") args[i + 1] = "0";
  }
  hd::test::expect_refused(args, "--trials must be between 1 and 256, not 0");
  EXPECT_FALSE(fs::exists(out));
}
