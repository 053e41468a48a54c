// The experiment kinds (store/experiment_kind.h) and the tables that dispatch on them: every
// kind shows, shows as JSON, becomes a report and is listed by serve through one table per
// layer; a kind this build does not know is one clear line everywhere, never read as a diff.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>
#include <sstream>

#include "kinds/views.h"
#include "serve/catalog.h"
#include "serve/public_paths.h"
#include "store/experiment.h"
#include "kinds/registry.h"
#include "store/experiment_kind.h"
#include "test_support.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct ExperimentKinds : testing::Test {
  // One of each kind on tiny-llama, as small as each can be.
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("kinds"));
    const std::string m = *dir_ + "/m.gguf", t = *dir_ + "/t.txt";
    ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "-o", m}).exit_code, 0);
    std::string text;
    for (int i = 0; i < 300; ++i) text += (i % 3 ? "stone river " : "light. ");
    hd::test::write_file(t, text);
    const std::vector<std::string> common = {"-f", t, "--chunk", "32", "--max-chunks", "2"};
    auto with = [&](std::vector<std::string> args, const std::string& out) {
      args.insert(args.end(), common.begin(), common.end());
      args.insert(args.end(), {"-o", *dir_ + "/" + out});
      const auto r = hd::test::run_cli(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    };
    with({"diff", "--a", m, "--b", m, "--b-ub", "8"}, "d.hdy");
    with({"sweep", "--a", m, "--b-ub", "8"}, "s.hdy");
    with({"floor", "-m", m, "--ub", "8,32"}, "f.hdy");
  }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  static std::string* dir_;
};
std::string* ExperimentKinds::dir_ = nullptr;

void set_kind(const std::string& path, const std::string& kind) {
  hd::test::sql(path, "UPDATE meta SET value = '" + kind + "' WHERE key = 'kind'");
}

}  // namespace

TEST(ExperimentKindRegistry, NamesAreUniqueAndFoundByName) {
  std::set<std::string_view> names;
  for (const auto& k : hd::kinds::run_kinds()) {
    EXPECT_TRUE(names.insert(k->name()).second) << k->name();
    EXPECT_EQ(hd::kinds::kind_named(k->name()), k.get());
    EXPECT_FALSE(k->description().empty()) << k->name();
  }
  EXPECT_EQ(hd::kinds::kind_named("no-such-kind"), nullptr);
  EXPECT_EQ(hd::store::finish_hint("sweep", "s.hdy"),
            "finish it with heterodyne sweep --resume s.hdy");
}

// A sweep's and a floor's report and result document carry the text show prints, as is; a
// diff's is the result the page draws; serve lists all three with their kind.
TEST_F(ExperimentKinds, EveryKindShowsReportsAndIsListed) {
  for (const char* name : {"d", "s", "f"}) {
    const std::string file = path(std::string(name) + ".hdy");
    const auto shown = hd::test::run_cli({"show", file});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    const std::string data = path(std::string(name) + ".json");
    const auto r = hd::test::run_cli({"report", file, "--data", data, "-o", data + ".html"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json doc = json::parse(hd::test::read_file(data));
    if (std::string(name) == "d") {
      EXPECT_TRUE(doc.contains("summary") && doc["chunks"].size() == 2u);
      continue;
    }
    const std::string kind = std::string(name) == "s" ? "sweep" : "floor";
    EXPECT_EQ(doc["kind"], kind);
    EXPECT_EQ(doc["text"], shown.out);
    EXPECT_TRUE(doc[kind].is_object());
    const json j = json::parse(hd::test::run_cli({"show", file, "--json"}).out);
    EXPECT_EQ(j["kind"], kind);
    EXPECT_EQ(j[kind], doc[kind]);
  }
  const hd::serve::PublicPaths paths(*dir_, *dir_);
  const json list = hd::serve::list_experiments(hd::serve::Sandbox(*dir_), paths);
  std::map<std::string, json> by_name;
  for (const auto& e : list) by_name[e["name"]] = e;
  ASSERT_EQ(by_name.size(), 3u) << list.dump();
  EXPECT_EQ(by_name["d"]["kind"], "diff");
  EXPECT_GE(by_name["d"]["kl_mean"].get<double>(), 0.0);
  // B's file bits per weight, from the facts its provenance recorded (the compare page's x).
  const json d = json::parse(hd::test::run_cli({"show", path("d.hdy"), "--json"}).out);
  const json& b = d["provenance"]["arms"]["b"];
  EXPECT_EQ(by_name["d"]["b_size"].get<double>(), b["model_size"].get<double>());
  EXPECT_DOUBLE_EQ(by_name["d"]["b_bpw"].get<double>(),
                   8 * b["model_size"].get<double>() / b["n_params"].get<double>());
  EXPECT_GT(by_name["d"]["b_bpw"].get<double>(), 1.0);
  EXPECT_EQ(by_name["s"]["kind"], "sweep");
  EXPECT_EQ(by_name["f"]["kind"], "floor");
  for (const char* n : {"d", "s", "f"}) {
    EXPECT_EQ(by_name[n]["a"], "m.gguf") << n;  // relative, as serve shows paths
    EXPECT_EQ(by_name[n]["status"], "complete") << n;
  }
}

TEST_F(ExperimentKinds, DiffFlagsOnASweepAreRefusedNamingItsKind) {
  hd::test::expect_refused({"show", path("s.hdy"), "--worst", "3"}, "is a sweep: --worst");
  hd::test::expect_refused({"show", path("f.hdy"), "--transplants"}, "is a floor: --worst");
  hd::test::expect_refused({"show", path("d.hdy"), path("s.hdy")}, "is a sweep, not one of the diffs");
}

// A file of a kind from a later version: every reader says so in one line, and serve does not
// list it; nothing reads it as a diff.
TEST_F(ExperimentKinds, AnUnknownKindIsOneClearLineEverywhere) {
  const std::string odd = path("odd.hdy");
  fs::copy_file(path("d.hdy"), odd, fs::copy_options::overwrite_existing);
  set_kind(odd, "frobnicate");
  const std::string says = "kind 'frobnicate', which this heterodyne does not know";
  hd::test::expect_refused({"show", odd}, says);
  hd::test::expect_refused({"show", odd, "--json"}, says);
  hd::test::expect_refused({"verify", odd}, says);
  hd::test::expect_refused({"report", odd, "--data", path("odd.json")}, says);
  hd::test::expect_refused({"diff", "--resume", odd}, says);
  const json list =
      hd::serve::list_experiments(hd::serve::Sandbox(*dir_), hd::serve::PublicPaths(*dir_, *dir_));
  for (const auto& e : list) EXPECT_NE(e["name"], "odd");
  fs::remove(odd);
}

// Serve sends a sweep's or floor's whole document, show's text included: no absolute path may
// survive its scrubbing, wherever it stands in that text (show writes B's values as "*VALUE").
TEST_F(ExperimentKinds, ServeShowsNoAbsolutePathOfASweepOrFloor) {
  const hd::serve::PublicPaths paths("/nowhere/models", *dir_);
  for (const char* name : {"s.hdy", "f.hdy"}) {
    json doc = hd::kinds::result_document(path(name));
    ASSERT_NE(doc.dump().find(*dir_), std::string::npos) << "the test needs a path to scrub";
    paths.scrub(doc);
    EXPECT_EQ(doc.dump().find(*dir_), std::string::npos) << doc.dump();
  }
  EXPECT_EQ(paths.text("*/home/alice/llama-b, \n/home/alice/m.gguf dir=/x/y and a/b"),
            "*llama-b, \nm.gguf dir=y and a/b");
}

// No special names: outside a kind's folder (src/kinds/<name>/) and its page
// (web/src/kind_<name>.ts) no line holds the kind's name as a string where it could select the
// kind: beside the word "kind" (a comparison, a lookup, a stored kind) or as a command's first
// argument. "diff" and "floor" also name the A-vs-B and A-vs-A′ comparisons, which stay.
TEST(ExperimentKindRegistry, NoKindsNameSelectsItOutsideItsFolder) {
  const fs::path root = HD_SOURCE_DIR;
  std::vector<std::string> found;
  for (const auto& k : hd::kinds::run_kinds()) {
    std::string folder(k->name());
    std::replace(folder.begin(), folder.end(), '-', '_');
    const std::string literal = "\"" + std::string(k->name()) + "\"";
    for (const char* dir : {"src", "web/src"}) {
      for (const auto& f : fs::recursive_directory_iterator(root / dir)) {
        const std::string rel = fs::relative(f.path(), root).string();
        const std::string ext = f.path().extension().string();
        if (!f.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".ts")) continue;
        if (rel.rfind("src/kinds/" + folder + "/", 0) == 0 || rel == "web/src/kind_" + folder + ".ts")
          continue;
        std::istringstream text(hd::test::read_file(f.path().string()));
        int n = 0;
        for (std::string line; std::getline(text, line);) {
          ++n;
          const size_t at = line.find(literal);
          if (at == std::string::npos) continue;
          std::string lower = line;
          std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
          const bool beside_kind = lower.find("kind") != std::string::npos;
          const bool as_command = line.find(literal + ", \"--") != std::string::npos;
          const size_t comment = line.find("//");
          if ((beside_kind || as_command) && (comment == std::string::npos || comment > at))
            found.push_back(rel + ":" + std::to_string(n) + ": " + line);
        }
      }
    }
  }
  EXPECT_TRUE(found.empty()) << ::testing::PrintToString(found);
  EXPECT_EQ(hd::kinds::form_kind().name(), hd::kinds::kind_named("diff")->name());
}
