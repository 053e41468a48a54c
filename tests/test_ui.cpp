// The web UI in a real browser: Debian's headless Chromium driven by playwright-core (npm), via
// web/test/ui.test.mjs. One test opens a `heterodyne report` file from disk, the other drives
// `heterodyne serve` through its form. Screenshots land in <build>/test-artifacts/ui/.
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

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
  const std::string page = slurp(html);
  // Everything inline (the browser script also fails on any request that leaves the file).
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(browser("report " + html + " " + artifacts("report")), 0);
}

TEST(WebUi, ServeRunsADiffThroughTheFormAndShowsIt) {
  HD_REQUIRE_SHARED();
  require_browser();
  const std::string dir = hd::test::temp_dir("ui-serve");
  const std::string err = dir + "/serve.err";
  fs::create_directories(dir + "/experiments");
  const pid_t pid = hd::test::spawn_cli({"serve", "--models", hd::test::shared_path("models"),
                                         "--experiments", dir + "/experiments", "--port", "0"},
                                        dir + "/serve.out", err);
  int port = 0;
  const std::regex listening(R"(serving on http://127\.0\.0\.1:(\d+)/)");
  for (int i = 0; i < 100 && port == 0; ++i) {
    std::smatch m;
    const std::string text = slurp(err);
    if (std::regex_search(text, m, listening)) port = std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(port, 0) << slurp(err);
  const int rc = browser("serve http://127.0.0.1:" + std::to_string(port) + "/ " +
                         artifacts("serve") + " stories260K.gguf Q8_0");
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(rc, 0) << slurp(err);
}
