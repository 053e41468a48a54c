// The web UI in a real browser: Debian's headless Chromium driven by playwright-core (npm), via
// web/test/ui.test.mjs. Most open `heterodyne report` files from disk (a diff's, each other
// kind's, several diffs compared); one drives `heterodyne serve` through its form. Screenshots land in <build>/test-artifacts/ui/.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "store/experiment.h"
#include "test_support.h"

namespace fs = std::filesystem;

using hd::test::browser_check;
using hd::test::require_browser;

TEST(WebUi, ReportFileOpensOfflineAndDrawsEverything) {
  HD_REQUIRE_SHARED();
  ASSERT_NO_FATAL_FAILURE(require_browser());
  const std::string dir = hd::test::temp_dir("ui-report");
  const std::string run = dir + "/run.hdy", html = dir + "/run.html";
  const auto diff = hd::test::run_cli(
      {"diff", "--a", hd::test::shared_path("models/stories260K.gguf"), "--b-quant", "Q8_0",
       "--text-file", hd::test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "128",
       "--max-chunks", "3", "--components", "--lens", "-o", run});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  const auto report = hd::test::run_cli({"report", run, "-o", html});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string page = hd::test::read_file(html);
  // Everything inline (the browser script also fails on any request that leaves the file).
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(browser_check("report", html, "report"), 0);
}

// Every kind has its page: one tiny model and text for a sweep, a floor and a gate reference
// (a recipe's page and the compare page are checked on test_recommend.cpp's run, which makes
// both a recipe and a ladder of held-out diffs).
class WebUiKinds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("ui-kinds"));
    ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f32", "-o",
                                 path("m.gguf")})
                  .exit_code,
              0);
    std::string words;
    for (int i = 0; i < 600; ++i) words += i % 3 ? "stone river " : i % 7 ? "light. " : "under a bridge ";
    hd::test::write_file(path("t.txt"), words);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  // Reports `files` into NAME.html and runs the browser script's MODE on it.
  static void report_and_check(const std::vector<std::string>& files, const std::string& name,
                               const std::string& mode) {
    std::vector<std::string> args = {"report"};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), {"-o", path(name + ".html")});
    const auto report = hd::test::run_cli(args);
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_EQ(browser_check(mode, path(name + ".html"), name), 0);
  }
  static std::string* dir_;
};
std::string* WebUiKinds::dir_ = nullptr;

// Two settings: Shapley bars, a 2 × 2 table and an interaction; the page keeps show's text.
TEST_F(WebUiKinds, ASweepHasShapleyBarsInteractionsAndEveryCombination) {
  ASSERT_NO_FATAL_FAILURE(require_browser());
  const auto sweep = hd::test::run_cli({"sweep", "--a", path("m.gguf"), "--b-ub", "8", "--b-ctk",
                                        "q8_0", "-f", path("t.txt"), "--chunk", "32",
                                        "--max-chunks", "3", "-o", path("s.hdy")});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  report_and_check({path("s.hdy")}, "sweep", "summary");
}

TEST_F(WebUiKinds, AFloorHasAMapOfUbatchThreadsAndFlashAttention) {
  ASSERT_NO_FATAL_FAILURE(require_browser());
  const auto floor = hd::test::run_cli({"floor", "-m", path("m.gguf"), "-f", path("t.txt"),
                                        "--ub", "3,64", "--fa", "off,on", "--threads", "1",
                                        "--ref-ub", "64", "--chunk", "64", "--max-chunks", "1",
                                        "-o", path("f.hdy")});
  ASSERT_EQ(floor.exit_code, 0) << floor.err;
  report_and_check({path("f.hdy")}, "floor", "summary");
}

// Two prompts, one of them markup a page must show as text; B with a q4_0 K cache, which parts
// from A on this model (the page's marks and transplant tables are then drawn, not absent).
TEST_F(WebUiKinds, AGenerateRunShowsCompletionsSideBySideAndThePartingToken) {
  ASSERT_NO_FATAL_FAILURE(require_browser());
  hd::test::write_file(path("prompts.txt"),
                       "stone river under\n<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>\n");
  const auto gen = hd::test::run_cli({"generate", "--a", path("m.gguf"), "--b-ctk", "q4_0", "--prompts",
                                      path("prompts.txt"), "-n", "24", "-o", path("g.hdy")});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_NE(hd::test::rows_text(path("g.hdy"), "select count(*) from generate_partings where parted >= 0"),
            "0|\n");
  report_and_check({path("g.hdy")}, "generate", "summary");
}

// capture → calibrate → check with a q8_0 K cache (it diverges at kqv_out-0, test_gate.cpp):
// the reference's page marks the taps over their tolerance and names the first.
TEST_F(WebUiKinds, AGateReferenceShowsTapsToleranceAndTheCheck) {
  ASSERT_NO_FATAL_FAILURE(require_browser());
  ASSERT_EQ(hd::test::run_cli({"capture", "-m", path("m.gguf"), "-f", path("t.txt"),
                               "--max-tokens", "48", "-o", path("ref")})
                .exit_code,
            0);
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", path("ref")}).exit_code, 0);
  const auto check = hd::test::run_cli({"check", "--reference", path("ref"), "-m", path("m.gguf"),
                                        "-ctk", "q8_0", "--json-out", path("check.json")});
  ASSERT_EQ(check.exit_code, 1) << check.err;
  const auto report = hd::test::run_cli({"report", path("ref"), "--check", path("check.json"),
                                         "-o", path("reference.html")});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(browser_check("summary", path("reference.html"), "reference"), 0);
  // The page's own output may not land on the reference's files.
  const auto onto = hd::test::run_cli({"report", path("ref"), "-o", path("ref/manifest.json"),
                                       "--force"});
  EXPECT_NE(onto.exit_code, 0);
  EXPECT_NE(hd::test::read_file(path("ref/manifest.json")).find("schema_version"),
            std::string::npos);
  const auto stray = hd::test::run_cli({"report", path("m.gguf"), "--check", path("check.json"),
                                        "-o", path("x.html")});
  EXPECT_NE(stray.exit_code, 0);
  EXPECT_NE(stray.err.find("--check is for a gate reference"), std::string::npos) << stray.err;
  // A file that is not a check's result (here the reference's own tolerances) is refused whole.
  const auto not_a_check = hd::test::run_cli({"report", path("ref"), "--check",
                                              path("ref/tolerances.json"), "-o", path("y.html")});
  EXPECT_EQ(not_a_check.exit_code, 2);
  EXPECT_NE(not_a_check.err.find("is not a result of `heterodyne check --json-out`"),
            std::string::npos)
      << not_a_check.err;
}

TEST(WebUi, ServeRunsADiffThroughTheFormAndShowsIt) {
  HD_REQUIRE_SHARED();
  ASSERT_NO_FATAL_FAILURE(require_browser());
  const std::string dir = hd::test::temp_dir("ui-serve");
  fs::create_directories(dir + "/experiments");
  const auto serve =
      hd::test::start_serve(hd::test::shared_path("models"), dir + "/experiments", dir);
  ASSERT_GT(serve.port, 0) << hd::test::read_file(serve.err_path);
  const int rc =
      browser_check("serve", "'" + hd::test::serve_url(serve) + "'", "serve", "stories260K.gguf Q8_0");
  hd::test::stop_serve(serve);
  EXPECT_EQ(rc, 0) << hd::test::read_file(serve.err_path);
}

// Every page of a large result is ready within a budget by the page's own clock (performance
// marks, web/test/page_timing.mjs), on a first visit and again. The result is as large as the
// demo's largest (8 chunks of 256 with components: ≈ 800 KB of JSON). Issue 45's target is 1 s
// on an idle machine (`make bench-pages` holds the demo's results to it); beside the rest of the
// suite the test allows 2.5 s, which the server answering with Brotli at its maximum quality
// per request (1.9 s for that result alone) does not meet.
TEST(WebUi, EveryPageOfALargeResultIsReadyWithinItsBudget) {
  HD_REQUIRE_SHARED();
  ASSERT_NO_FATAL_FAILURE(require_browser());
  const std::string dir = hd::test::temp_dir("ui-timing");
  fs::create_directories(dir + "/experiments");
  const auto diff = hd::test::run_cli(
      {"diff", "--a", hd::test::shared_path("models/stories260K.gguf"), "--b-quant", "Q4_K_M",
       "--text-file", hd::test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "256",
       "--max-chunks", "8", "--components", "-o", dir + "/experiments/large.hdy"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  fs::copy_file(dir + "/experiments/large.hdy", dir + "/experiments/large-copy.hdy");
  const auto serve =
      hd::test::start_serve(hd::test::shared_path("models"), dir + "/experiments", dir);
  ASSERT_GT(serve.port, 0) << hd::test::read_file(serve.err_path);
  ::setenv("HD_PAGE_BUDGET_MS", "2500", 1);
  const int rc = browser_check("timing", "'" + hd::test::serve_url(serve) + "'", "timing",
                               "large,large-copy");
  ::unsetenv("HD_PAGE_BUDGET_MS");
  hd::test::stop_serve(serve);
  EXPECT_EQ(rc, 0) << hd::test::read_file(serve.err_path);
}

namespace {

// Every string inside `j` with `payload` after it (keys are left: they are the document's).
void append_everywhere(nlohmann::json& j, const std::string& payload) {
  if (j.is_string()) {
    j = j.get<std::string>() + payload;
  } else if (j.is_structured()) {
    for (auto& v : j) append_everywhere(v, payload);
  }
}

}  // namespace

// One hostile run blanked a whole page: "<!--<script>" in its file name, its model's path or
// its text left the real "</script>" unseen. Here every string the page draws holds markup: the
// folder, the model's and the experiment's names, the text, every string of the stored
// configuration and provenance, and a token's text. The page draws, shows them as text, runs
// nothing of them and leads with the integrity warning (the file was edited after sealing).
TEST(WebUi, AReportWhoseStringsHoldMarkupDrawsThemAsTextAndRunsNothing) {
  HD_REQUIRE_SHARED();
  ASSERT_NO_FATAL_FAILURE(require_browser());
  const std::string payload = "<!--<script></script><script>window.__pwned=1</script>"
                              "<img src=x onerror=window.__pwned=2>&amp;";
  const std::string dir = hd::test::temp_dir("ui-hostile") + "/<!--<script>x";
  fs::create_directories(dir);
  const std::string model = dir + "/m<!--<script>.gguf", run = dir + "/<!--<script>run.hdy";
  fs::copy_file(hd::test::shared_path("models/stories260K.gguf"), model);
  std::string text = hd::test::read_file(hd::test::shared_path("corpora/tom-sawyer.txt")).substr(0, 3000);
  text.insert(200, " " + payload + " ");
  hd::test::write_file(dir + "/t.txt", text);
  const auto diff = hd::test::run_cli({"diff", "--a", model, "--b-quant", "Q8_0", "-f",
                                       dir + "/t.txt", "--chunk", "64", "--max-chunks", "3",
                                       "-o", run});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  for (const char* key : {"config", "provenance"}) {
    auto e = hd::store::Experiment::open(run, true);
    auto j = nlohmann::json::parse(*e.meta(key));
    append_everywhere(j, payload);
    e.set_meta(key, j.dump());
  }
  hd::test::sql(run, "UPDATE vocab SET text = text || '" + payload +
                         "' WHERE token_id = (SELECT min(token_id) FROM vocab)");
  const std::string html = dir + "/page.html";
  const auto report = hd::test::run_cli({"report", run, "-o", html});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.err.find("fails its integrity check"), std::string::npos) << report.err;
  EXPECT_EQ(browser_check("hostile", "'" + html + "'", "hostile"), 0);
}

// docs/serve.md shows every view the Makefile's `screenshots` target copies (SHOT_VIEWS), at
// 1280 and 390 px, and each is a JPEG in docs/screenshots/ (a shot the browser tests took).
TEST(UiDocs, ServeShowsEveryViewAt1280And390) {
  const std::string root = HD_SOURCE_DIR;
  std::ifstream make(root + "/Makefile");
  std::string line, views;
  bool in_list = false;
  while (std::getline(make, line)) {
    if (line.rfind("SHOT_VIEWS :=", 0) == 0) in_list = true, line = line.substr(13);
    if (!in_list) continue;
    const bool more = !line.empty() && line.back() == '\\';
    views += " " + (more ? line.substr(0, line.size() - 1) : line);
    if (!more) break;
  }
  std::istringstream names(views);
  std::ifstream doc_in(root + "/docs/serve.md");
  const std::string doc((std::istreambuf_iterator<char>(doc_in)), {});
  int n = 0;
  for (std::string v; names >> v; ++n) {
    for (const char* w : {"1280", "390"}) {
      const std::string shot = "screenshots/" + v + "-" + w + ".jpg";
      EXPECT_NE(doc.find("(" + shot + ")"), std::string::npos) << "docs/serve.md lacks " << shot;
      std::ifstream f(root + "/docs/" + shot, std::ios::binary);
      unsigned char magic[3] = {0, 0, 0};
      f.read(reinterpret_cast<char*>(magic), 3);
      EXPECT_TRUE(magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF)
          << "docs/" << shot << " is missing or not a JPEG (make test, then make screenshots)";
    }
  }
  EXPECT_GE(n, 9) << "the Makefile's SHOT_VIEWS: " << views;
}
