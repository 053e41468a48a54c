// The web UI in a real browser: Debian's headless Chromium driven by playwright-core (npm), via
// web/test/ui.test.mjs. Two tests open `heterodyne report` files from disk (a diff's, a
// sweep's), the other drives `heterodyne serve` through its form. Screenshots land in <build>/test-artifacts/ui/.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "test_support.h"

namespace fs = std::filesystem;

namespace {

std::string artifacts(const std::string& name) {
  const fs::path dir = fs::path(HD_BINARY).parent_path() / "test-artifacts" / "ui" / name;
  fs::create_directories(dir);
  return dir.string();
}

// Runs the browser script; its output is printed so a failing check names itself.
int browser(const std::string& args) {
  const std::string cmd = "node " HD_SOURCE_DIR "/web/test/ui.test.mjs " + args + " 2>&1";
  std::printf("%s\n", cmd.c_str());
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void require_browser() {
  ASSERT_TRUE(fs::exists("/usr/bin/chromium"))
      << "Debian's chromium is missing: scripts/install-deps.sh installs it";
  ASSERT_TRUE(fs::exists(HD_SOURCE_DIR "/web/node_modules/playwright-core"))
      << "web/node_modules is missing: the build (scripts/web.sh) installs it";
}

}  // namespace

TEST(WebUi, ReportFileOpensOfflineAndDrawsEverything) {
  HD_REQUIRE_SHARED();
  require_browser();
  const std::string dir = hd::test::temp_dir("ui-report");
  const std::string run = dir + "/run.hdy", html = dir + "/run.html";
  const auto diff = hd::test::run_cli(
      {"diff", "--a", hd::test::shared_path("models/stories260K.gguf"), "--b-quant", "Q8_0",
       "--text-file", hd::test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "128",
       "--max-chunks", "3", "--components", "-o", run});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  const auto report = hd::test::run_cli({"report", run, "-o", html});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string page = hd::test::read_file(html);
  // Everything inline (the browser script also fails on any request that leaves the file).
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(browser("report " + html + " " + artifacts("report")), 0);
}

// A kind without plots of its own (a sweep): the report shows what `show` prints, as is.
TEST(WebUi, ASweepsReportShowsWhatShowPrints) {
  require_browser();
  const std::string dir = hd::test::temp_dir("ui-sweep");
  const std::string model = dir + "/m.gguf", text = dir + "/t.txt", run = dir + "/s.hdy";
  ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "-o", model}).exit_code, 0);
  std::string words;
  for (int i = 0; i < 200; ++i) words += i % 3 ? "stone river " : "light. ";
  hd::test::write_file(text, words);
  const auto sweep = hd::test::run_cli({"sweep", "--a", model, "--b-ub", "8", "-f", text,
                                        "--chunk", "32", "--max-chunks", "2", "-o", run});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const auto report = hd::test::run_cli({"report", run, "-o", dir + "/s.html"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(browser("summary " + dir + "/s.html " + artifacts("summary")), 0);
}

TEST(WebUi, ServeRunsADiffThroughTheFormAndShowsIt) {
  HD_REQUIRE_SHARED();
  require_browser();
  const std::string dir = hd::test::temp_dir("ui-serve");
  fs::create_directories(dir + "/experiments");
  const auto serve =
      hd::test::start_serve(hd::test::shared_path("models"), dir + "/experiments", dir);
  ASSERT_GT(serve.port, 0) << hd::test::read_file(serve.err_path);
  const int rc =
      browser("serve '" + hd::test::serve_url(serve) + "' " + artifacts("serve") + " stories260K.gguf Q8_0");
  hd::test::stop_serve(serve);
  EXPECT_EQ(rc, 0) << hd::test::read_file(serve.err_path);
}
