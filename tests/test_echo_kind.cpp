// Issue 41's proof that a kind is a plug-in: the echo kind (src/kinds/echo/, one line in
// kinds/registry.cpp, web/src/kind_echo.ts) is named nowhere else, and yet the command line
// (diff's input, arm and output flags, --resume), show, show --json, verify, report and serve's
// list all read it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "kinds/registry.h"
#include "serve/catalog.h"
#include "serve/public_paths.h"
#include "serve/sandbox.h"
#include "test_support.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every source file under `root` (relative paths; its READMEs aside) whose text names `word` as a word, and how often.
std::map<std::string, int> files_naming(const fs::path& root, const std::string& word) {
  std::map<std::string, int> out;
  const std::regex re("\\b" + word + "\\b");
  for (const auto& f : fs::recursive_directory_iterator(root)) {
    const std::string ext = f.path().extension().string();
    if (!f.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".ts")) continue;
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    const auto n = std::distance(std::sregex_iterator(s.begin(), s.end(), re), std::sregex_iterator());
    if (n > 0) out[fs::relative(f.path(), root).string()] = static_cast<int>(n);
  }
  return out;
}

}  // namespace

// The kind's name stands in its folder, its web file and its registration line: nowhere else.
TEST(EchoKind, IsNamedOnlyInItsFolderItsWebFileAndItsRegistration) {
  const fs::path src = fs::path(HD_SOURCE_DIR) / "src";
  std::map<std::string, int> outside;
  for (const auto& [file, n] : files_naming(src, "echo")) {
    if (file.rfind("kinds/echo/", 0) != 0) outside[file] = n;
  }
  EXPECT_EQ(outside, (std::map<std::string, int>{{"kinds/registry.cpp", 1}}));
  const auto web = files_naming(fs::path(HD_SOURCE_DIR) / "web" / "src", "echo");
  EXPECT_EQ(web.size(), 1u);
  EXPECT_TRUE(web.count("kind_echo.ts"));
  ASSERT_NE(hd::kinds::kind_named("echo"), nullptr);
  EXPECT_TRUE(hd::kinds::kind_named("echo")->hidden());
}

TEST(EchoKind, RunsShowsVerifiesResumesReportsAndIsListed) {
  const std::string dir = hd::test::temp_dir("echo-kind");
  const std::string m = dir + "/m.gguf", t = dir + "/t.txt", e = dir + "/e.hdy";
  ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "-o", m}).exit_code, 0);
  std::string text;
  for (int i = 0; i < 300; ++i) text += (i % 3 ? "stone river " : "light. ");
  hd::test::write_file(t, text);
  // diff's spelling of the input, the arm and the output.
  const auto run = hd::test::run_cli({"echo", "--a", m, "-f", t, "--chunk", "32", "--max-chunks",
                                      "3", "--ub", "8", "-t", "1", "-o", e});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  hd::test::expect_refused({"echo", "--a", m, "-f", t, "-o", e}, "exists");  // no --force

  const auto shown = hd::test::run_cli({"show", e});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("93 positions in 3 chunks"), std::string::npos) << shown.out;
  const auto as_json = hd::test::run_cli({"show", e, "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json j = json::parse(as_json.out);
  EXPECT_EQ(j["kind"], "echo");
  EXPECT_EQ(j["echo"]["n_positions"], 93);
  const double nll = j["echo"]["nll_mean"].get<double>();
  EXPECT_GT(nll, 0.0);
  EXPECT_NEAR(j["echo"]["ppl"].get<double>(), std::exp(nll), 1e-9 * std::exp(nll));
  hd::test::expect_refused({"show", e, "--worst", "3"}, "is a echo: --worst");

  const auto verified = hd::test::run_cli({"verify", e});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find("all 3 chunks reproduce bitwise"), std::string::npos);

  // A changed row fails the integrity check: the kind's own table is hashed with the file.
  const std::string changed = dir + "/changed.hdy";
  fs::copy_file(e, changed);
  hd::test::sql(changed, "UPDATE echo_positions SET nll = nll + 1 WHERE chunk = 1 AND pos = 4");
  const auto damaged = hd::test::run_cli({"verify", changed});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_NE(damaged.err.find("integrity check failed"), std::string::npos) << damaged.err;

  // A stored chunk edited before --resume is refused: resume never adds to edited rows.
  const std::string edited = dir + "/edited.hdy";
  fs::copy_file(e, edited);
  hd::test::sql(edited, "UPDATE echo_positions SET nll = nll + 1 WHERE chunk = 0 AND pos = 3; "
                        "DELETE FROM meta WHERE key IN ('integrity_sha256', 'echo'); UPDATE meta "
                        "SET value = 'running' WHERE key = 'status'");
  hd::test::expect_refused({"echo", "--resume", edited}, "echo chunk 0 was changed after it was stored");

  // A table heterodyne never writes (a virtual one: its module could be anything) is not read.
  const std::string virt = dir + "/virtual.hdy";
  fs::copy_file(e, virt);
  hd::test::sql(virt, "CREATE VIRTUAL TABLE x USING fts5(a)");
  hd::test::expect_refused({"show", virt}, "its table \"x\" is not an ordinary table");

  // Stopped before its last chunk: --resume computes it, and the file is the same again.
  const std::string cut = dir + "/cut.hdy";
  fs::copy_file(e, cut);
  hd::test::sql(cut, "DELETE FROM echo_positions WHERE chunk = 2; DELETE FROM meta WHERE key IN "
                     "('integrity_sha256', 'echo'); UPDATE meta SET value = 'running' WHERE key = "
                     "'status'");
  const auto resumed = hd::test::run_cli({"echo", "--resume", cut});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(hd::test::run_cli({"show", cut, "--json"}).out.find("\"n_positions\": 93"),
            as_json.out.find("\"n_positions\": 93"));
  EXPECT_EQ(hd::test::run_cli({"verify", cut}).exit_code, 0);

  const std::string data = dir + "/e.json";
  const auto report = hd::test::run_cli({"report", e, "--data", data, "-o", dir + "/e.html"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const json doc = json::parse(hd::test::read_file(data));
  EXPECT_EQ(doc["kind"], "echo");
  EXPECT_EQ(doc["echo"]["n_positions"], 93);
  EXPECT_NE(doc["text"].get<std::string>().find("mean NLL"), std::string::npos);

  const json list =
      hd::serve::list_experiments(hd::serve::Sandbox(dir), hd::serve::PublicPaths(dir, dir));
  bool listed = false;
  for (const auto& entry : list) {
    if (entry["name"] != "e") continue;
    listed = true;
    EXPECT_EQ(entry["kind"], "echo");
    EXPECT_EQ(entry["a"], "m.gguf");
    EXPECT_EQ(entry["status"], "complete");
  }
  EXPECT_TRUE(listed) << list.dump();
}
