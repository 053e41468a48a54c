// recommend: llama.cpp's quantizer takes pinned per-tensor types exactly (and, unpinned, moves
// tensors nobody named: the pitfall the pinning avoids); a recipe at Q4_K_M's size is made,
// read back type by type, predicted to the byte, read the same by the real llama-quantize,
// verified, and shown; bad input is refused in one line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "common/sha256.h"
#include "engine/gguf_tensors.h"
#include "engine/quantize.h"
#include "kinds/recommend/recommend_passes.h"
#include "test_support.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> types_of(const std::string& path) {
  std::map<std::string, std::string> out;
  for (const auto& t : hd::engine::gguf_layout(path).tensors) out[t.name] = t.type;
  return out;
}

std::string words(int n, int seed) {
  const char* w[] = {"river", "stone", "light",  "quietly", "the", "and",   "under", "a",
                     "bridge", "morning", "of", "walked", "green", "old", "window", "rain"};
  std::string text;
  for (int i = 0; i < n; ++i) text += std::string(w[(i * seed + i / 5) % 16]) + (i % 11 ? " " : ". ");
  return text;
}

struct Recommend : testing::Test {
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("recommend"));
    ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f32", "-o",
                                 model()})
                  .exit_code,
              0);
    hd::test::write_file(*dir_ + "/calib.txt", words(1200, 7));
    hd::test::write_file(*dir_ + "/held.txt", words(1200, 5));
  }
  static std::string model() { return *dir_ + "/m.gguf"; }
  static std::string path(const std::string& name) { return *dir_ + "/" + name; }
  static std::vector<std::string> args(const std::string& out) {
    return {"recommend",       "--a",  model(), "-f", path("calib.txt"), "--held-out-text",
            path("held.txt"),  "--types", "Q3_K,Q6_K", "--layers-per-group", "4", "--chunk",
            "64", "--calibration-chunks", "2", "--held-out-chunks", "3", "--target-size",
            "Q4_K_M", "-o", path(out)};
  }
  static std::string* dir_;
};
std::string* Recommend::dir_ = nullptr;

// Where a group's variant may start: a layer's attention tensors before the layer, its MLP's
// after the layer's attention, the head after the last layer; anything else from the tokens.
TEST(RecommendStarts, AGroupStartsAtTheLastPointItsTensorsCannotChange) {
  using hd::run::first_changed_point;
  EXPECT_EQ(first_changed_point({"blk.2.attn_q.weight"}, 4), 4);
  EXPECT_EQ(first_changed_point({"blk.2.ffn_down.weight"}, 4), 5);
  EXPECT_EQ(first_changed_point({"blk.3.ffn_up.weight", "blk.1.ffn_up.weight"}, 4), 3);
  EXPECT_EQ(first_changed_point({"blk.0.attn_k.weight"}, 4), 0);
  EXPECT_EQ(first_changed_point({"output.weight"}, 4), 8);
  EXPECT_EQ(first_changed_point({"token_embd.weight"}, 4), 0);
  EXPECT_EQ(first_changed_point({"blk.9.ffn_up.weight"}, 4), 0);  // no such layer
  EXPECT_EQ(first_changed_point({"blk.x.ffn_up.weight"}, 4), 0);
  EXPECT_EQ(first_changed_point({"blk.2"}, 4), 0);
  EXPECT_EQ(first_changed_point({"output.weight", "token_embd.weight"}, 4), 0);
}

TEST_F(Recommend, UnpinnedOverrideMovesAnotherTensorPinnedOnesQuantizeToTheStockFile) {
  const std::string stock = hd::engine::ensure_quantized(model(), "Q4_K_M", 0);
  const auto base = types_of(stock);
  ASSERT_EQ(base.at("blk.2.attn_v.weight"), "Q6_K");  // Q4_K_M's more bits, layers 2 and 3
  // One override alone: Q4_K_M counts attn_v tensors as it meets them, and a manual one is not
  // counted, so layer 2 is taken for layer 1 and loses its bits.
  hd::engine::quantize_with_overrides(model(), path("one.gguf"), "Q4_K_M",
                                      {{R"(^blk\.0\.attn_v\.weight$)", "Q3_K"}}, 0);
  const auto one = types_of(path("one.gguf"));
  EXPECT_EQ(one.at("blk.0.attn_v.weight"), "Q3_K");
  EXPECT_EQ(one.at("blk.2.attn_v.weight"), "Q4_K") << "llama.cpp no longer moves it";
  // Every tensor pinned to the base's own type: the stock file, byte for byte.
  std::vector<hd::engine::TensorTypeOverride> pinned;
  for (const auto& [name, type] : base) {
    if (hd::engine::is_quantized_type(type)) pinned.push_back({"^" + std::regex_replace(name, std::regex(R"(\.)"), R"(\.)") + "$", type});
  }
  hd::engine::quantize_with_overrides(model(), path("pinned.gguf"), "Q4_K_M", pinned, 0);
  EXPECT_EQ(hd::sha256_file(path("pinned.gguf")), hd::sha256_file(stock));
}

TEST_F(Recommend, RecipeAtQ4KMSizeTakesEveryTypePredictsItsBytesAndVerifies) {
  const auto r = hd::test::run_cli(args("q4"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("recipe vs Q4_K_M"), std::string::npos) << r.out;
  const std::string dir = path("q4");
  const uint64_t stock = fs::file_size(hd::engine::ensure_quantized(model(), "Q4_K_M", 0));
  EXPECT_LE(fs::file_size(dir + "/model.gguf"), stock);
  // Every tensor has the type tensor-types.txt pins it to (first matching line, as
  // llama-quantize reads it), and every quantized tensor is pinned.
  std::ifstream lines(dir + "/tensor-types.txt");
  std::vector<std::pair<std::regex, std::string>> rules;
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.rfind('=');
    rules.emplace_back(std::regex(line.substr(0, eq)), line.substr(eq + 1));
  }
  int pinned = 0;
  for (const auto& [name, type] : types_of(dir + "/model.gguf")) {
    for (const auto& [re, t] : rules) {
      if (std::regex_search(name, re)) {
        EXPECT_EQ(type, t) << name;
        ++pinned;
        break;
      }
    }
  }
  EXPECT_EQ(pinned, static_cast<int>(rules.size()));
  const json shown = json::parse(hd::test::run_cli({"show", dir + "/report.hdy", "--json"}).out);
  const json& rec = shown.at("recommend");
  EXPECT_EQ(rec["predicted"]["file_bytes"], rec["measured"]["file_bytes"]);
  // Two rounds (the default) of: the start, then 9 groups (7 classes over layers 0-3,
  // token_embd, output) × 2 types.
  ASSERT_EQ(rec["sensitivity"].size(), 2u * (1u + 9u * 2u));
  // Round 0's recipe is round 1's start: its prediction is checked against that measurement.
  ASSERT_EQ(rec["rounds"].size(), 2u);
  EXPECT_EQ(rec["rounds"][0]["measured_kl_calibration"], rec["sensitivity"][19]["kl_calibration"]);
  EXPECT_EQ(rec["sensitivity"][19]["group"], "(recipe 1)");
  EXPECT_TRUE(rec["target_met"].get<bool>());
  EXPECT_EQ(rec["held_out"][0]["name"], "recipe");
  // The HTML report and its data carry what show prints, as for every kind but a diff.
  const auto rep = hd::test::run_cli({"report", dir + "/report.hdy", "--data", dir + "/r.json",
                                      "-o", dir + "/r.html"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const json doc = json::parse(hd::test::read_file(dir + "/r.json"));
  EXPECT_EQ(doc["kind"], "recommend");
  EXPECT_EQ(doc["text"], hd::test::run_cli({"show", dir + "/report.hdy"}).out);
  // Its page (the held-out ladder, the recipe highlighted), and the held-out diffs compared
  // on one page: the ladder of the recipe among the stock types; a recipe is no diff there.
  ASSERT_NO_FATAL_FAILURE(hd::test::require_browser());
  EXPECT_EQ(hd::test::browser_check("summary", dir + "/r.html", "recommend"), 0);
  std::vector<std::string> ladder = {"report"};
  for (const auto& f : fs::directory_iterator(dir + "/held-out")) ladder.push_back(f.path().string());
  ASSERT_GE(ladder.size(), 3u);
  ladder.insert(ladder.end(), {"-o", dir + "/ladder.html"});
  const auto cmp = hd::test::run_cli(ladder);
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_EQ(hd::test::browser_check("compare", dir + "/ladder.html", "compare"), 0);
  const auto mixed = hd::test::run_cli(
      {"report", dir + "/held-out/recipe.hdy", dir + "/report.hdy", "-o", dir + "/mixed.html"});
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_NE(mixed.err.find("is a recommend: only diffs are compared"), std::string::npos)
      << mixed.err;
  EXPECT_FALSE(fs::exists(dir + "/mixed.html"));
  EXPECT_EQ(hd::test::run_cli({"verify", dir + "/report.hdy"}).exit_code, 0);
  EXPECT_EQ(hd::test::run_cli({"verify", dir + "/held-out/recipe.hdy"}).exit_code, 0);
  const auto again = hd::test::run_cli({"recommend", "--resume", dir + "/report.hdy"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.err.find("already complete"), std::string::npos);
  // The real llama-quantize reads tensor-types.txt as recommend did: the same file.
  ASSERT_TRUE(fs::exists(HD_LLAMA_QUANTIZE)) << "llama-quantize was not built";
  const std::string cmd = std::string(HD_LLAMA_QUANTIZE) + " --tensor-type-file " + dir +
                          "/tensor-types.txt " + model() + " " + dir + "/peer.gguf Q4_K_M > " +
                          dir + "/peer.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << hd::test::read_file(dir + "/peer.log");
  EXPECT_EQ(types_of(dir + "/peer.gguf"), types_of(dir + "/model.gguf"));
  // A changed sensitivity row no longer verifies.
  hd::test::sql(dir + "/report.hdy",
                "UPDATE recommend_sensitivity SET kl_calibration = kl_calibration * 2 "
                "WHERE group_index = 0");
  EXPECT_NE(hd::test::run_cli({"verify", dir + "/report.hdy"}).exit_code, 0);
}

// Stopped in round 1 (whose start is the recipe round 0 chose), resumed: the rows reproduce
// bitwise when verify measures every unit again.
TEST_F(Recommend, StoppedInTheSecondRoundResumesToRowsThatVerify) {
  const std::string err = path("stopped.err");
  const int pid = hd::test::spawn_cli(args("stopped"), path("stopped.out"), err);
  for (int i = 0; i < 6000 && hd::test::read_file(err).find("round 1: blk") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(hd::test::read_file(err).find("round 1: blk"), std::string::npos)
      << hd::test::read_file(err);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << hd::test::read_file(err);
  EXPECT_NE(hd::test::read_file(err).find("heterodyne recommend --resume"), std::string::npos);
  const std::string report = path("stopped/report.hdy");
  const auto resumed = hd::test::run_cli({"recommend", "--resume", report});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("already stored"), std::string::npos) << resumed.err;
  const auto v = hd::test::run_cli({"verify", report});
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

TEST_F(Recommend, BadInputIsRefusedInOneLine) {
  // args("bad") with a flag's value replaced, or the flag added when it is not there.
  auto with = [&](std::vector<std::string> change) {
    auto a = args("bad");
    const auto it = std::find(a.begin(), a.end(), change[0]);
    if (it == a.end()) {
      a.insert(a.end(), change.begin(), change.end());
    } else {
      *(it + 1) = change[1];
    }
    return a;
  };
  hd::test::expect_refused(with({"--types", "Q4_K_M"}), "is a file type");
  hd::test::expect_refused(with({"--types", "Q9_K"}), "unknown tensor type");
  hd::test::expect_refused(with({"--target-size", "10kB"}), "smaller than any recipe");
  hd::test::expect_refused(with({"--target-size", "lots"}), "is not a size");
  hd::test::expect_refused(with({"--target-size", "0.5"}), "is not a size");
  hd::test::expect_refused(with({"--target-kl", "0.01"}), "one target");
  hd::test::expect_refused(with({"--base", "F16"}), "quantizes nothing");
  hd::test::expect_refused(with({"--held-out-text", path("calib.txt")}), "is the calibration text");
  // The calibration text with one space more was taken as held out, and its proof measured on
  // the calibration's own chunks: its tokens are what is compared.
  hd::test::write_file(path("calib-plus-space.txt"), " " + hd::test::read_file(path("calib.txt")));
  hd::test::expect_refused(with({"--held-out-text", path("calib-plus-space.txt")}),
                           "of its tokens with the calibration chunks");
  // Its held-out chunks in another order (the calibration's own sentences, reshuffled).
  const std::string calib = hd::test::read_file(path("calib.txt"));
  hd::test::write_file(path("calib-halves.txt"), calib.substr(calib.size() / 2) + " " +
                                                     calib.substr(0, calib.size() / 2));
  hd::test::expect_refused(with({"--held-out-text", path("calib-halves.txt")}),
                           "the proof must be measured on text the choice never saw");
  const std::string quantized = hd::engine::ensure_quantized(model(), "Q8_0", 0);
  hd::test::expect_refused(with({"--a", quantized}), "already quantized");
  EXPECT_FALSE(fs::exists(path("bad/report.hdy")));
}

// The reuse (variants spliced from one file per type, passes started at a group's first point
// from the start's rows, A's softmax kept) changes no figure: every sensitivity row, the recipe
// and its model are those of every variant quantized whole and every pass from the tokens.
TEST_F(Recommend, ReuseGivesTheFiguresOfWholeQuantizationsAndFullPasses) {
  auto a = args("reuse");
  *(std::find(a.begin(), a.end(), "--layers-per-group") + 1) = "2";  // starts mid-model
  const auto reused = hd::test::run_cli(a);
  ASSERT_EQ(reused.exit_code, 0) << reused.err;
  EXPECT_NE(reused.err.find("plan: 16 groups × 2 types from Q4_K_M, 2 rounds"), std::string::npos)
      << reused.err;
  EXPECT_NE(reused.err.find("spliced is llama.cpp's file byte for byte"), std::string::npos)
      << reused.err;
  EXPECT_EQ(reused.err.find("run from the tokens"), std::string::npos) << reused.err;
  EXPECT_NE(reused.err.find("round 0's start: variants' passes may start at 8 of its 8 points"),
            std::string::npos)
      << reused.err;
  auto b = a;
  *(std::find(b.begin(), b.end(), "-o") + 1) = path("whole");
  b.push_back("--no-reuse");
  const auto whole = hd::test::run_cli(b);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_NE(whole.err.find("every variant quantized whole"), std::string::npos) << whole.err;
  const auto rows = [&](const std::string& dir) {
    json rec = json::parse(hd::test::run_cli({"show", path(dir) + "/report.hdy", "--json"}).out)
                   .at("recommend");
    return rec.at("sensitivity").dump() + rec.at("rounds").dump() + rec.at("groups").dump();
  };
  EXPECT_EQ(rows("reuse"), rows("whole"));
  EXPECT_EQ(hd::test::read_file(path("reuse/tensor-types.txt")),
            hd::test::read_file(path("whole/tensor-types.txt")));
  EXPECT_EQ(hd::sha256_file(path("reuse/model.gguf")), hd::sha256_file(path("whole/model.gguf")));
  // Each measured row is a number, not a NaN that would compare equal as null both ways.
  const json rec = json::parse(hd::test::run_cli({"show", path("reuse/report.hdy"), "--json"}).out)
                       .at("recommend");
  int measured = 0;
  for (const auto& r : rec.at("sensitivity")) measured += r.at("kl_calibration").is_number();
  EXPECT_GE(measured, 20);
  // Only the temporary files' owner keeps them: none is left behind.
  for (const auto& f : fs::directory_iterator(path("reuse")))
    EXPECT_EQ(f.path().string().find(".part-"), std::string::npos) << f.path();
}

// --dry-run: the plan and an estimate on standard output, nothing written to -o.
TEST_F(Recommend, DryRunPrintsThePlanAndWritesNothing) {
  auto a = args("dry");
  a.push_back("--dry-run");
  const auto r = hd::test::run_cli(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plan: 9 groups × 2 types from Q4_K_M, 2 rounds: round 0 measures up to"),
            std::string::npos)
      << r.out;
  const std::regex estimate(R"(About \d+ s \(A's chunk pass took [0-9.]+ s here;)");
  EXPECT_TRUE(std::regex_search(r.out, estimate))
      << r.out;
  EXPECT_FALSE(fs::exists(path("dry")));
  auto small = a;
  *(std::find(small.begin(), small.end(), "--target-size") + 1) = "10kB";
  hd::test::expect_refused(small, "smaller than any recipe");
  a.insert(a.end(), {"--resume", path("dry/report.hdy")});
  hd::test::expect_refused(a, "--dry-run plans a new recommendation");
}

// A run killed with SIGKILL leaves its model-sized variant under its temporary name; the next
// run (or resume) in that folder removes it once it holds the report's lock, and keeps a live
// process's and every file that is not recommend's own.
TEST_F(Recommend, AKilledRunsTemporaryFilesAreRemovedAtTheNextStart) {
  const std::string out = path("stale");
  fs::create_directories(out);
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string stale = out + "/variant.gguf.part-" + std::to_string(dead) + "-0";
  const std::string live = out + "/variant.gguf.part-" + std::to_string(getpid()) + "-3";
  hd::test::write_file(stale, std::string(100000, 'x'));
  hd::test::write_file(live, "y");
  // llama.cpp's quantizer writing a type file through recommend's temporary: nested.
  const std::string nested = out + "/types-Q6_K.gguf.part-" + std::to_string(dead) + "-1.part-" +
                             std::to_string(dead) + "-2";
  hd::test::write_file(nested, "q");
  const std::string other = out + "/notes.txt.part-" + std::to_string(dead) + "-0";  // not its own
  hd::test::write_file(other, "z");
  auto a = args("stale");
  a.insert(a.end(), {"--rounds", "1"});
  const auto r = hd::test::run_cli(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("removed 2 temporary files (0.1 MB) a killed run left"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(nested));
  EXPECT_TRUE(fs::exists(other)) << "a file not recommend's own was removed";
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live)) << "a live process's temporary was removed";
}

}  // namespace
