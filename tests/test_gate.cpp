// capture -> calibrate -> check on tiny-llama (head dim 64, so a q8_0 K cache applies).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/output_file.h"
#include "serve/catalog.h"
#include "serve/public_paths.h"
#include "serve/sandbox.h"
#include "store/safetensors.h"
#include "test_support.h"

using nlohmann::json;

namespace {

class Gate : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(hd::test::temp_dir("gate"));
    model_ = new std::string(*dir_ + "/tiny-llama-f16.gguf");
    ASSERT_EQ(
        hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--type", "f16", "-o", *model_})
            .exit_code,
        0);
    hd::test::write_file(*dir_ + "/golden.txt",
                         "The quick brown fox jumps over the lazy dog. It was the best of times, "
                         "it was the worst of times, it was the age of wisdom. Call me Ishmael.");
    ref_ = new std::string(*dir_ + "/ref");
    const auto cap =
        hd::test::run_cli({"capture", "-m", *model_, "-f", *dir_ + "/golden.txt", "-o", *ref_});
    ASSERT_EQ(cap.exit_code, 0) << cap.err;
  }
  static json check(std::vector<std::string> extra, int want_exit) {
    std::vector<std::string> args = {"check", "--reference", *ref_, "-m",
                                     *model_, "--format",    "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = hd::test::run_cli(args);
    EXPECT_EQ(r.exit_code, want_exit) << r.err;
    return r.out.empty() ? json() : json::parse(r.out);
  }
  static std::string* dir_;
  static std::string* model_;
  static std::string* ref_;
};
std::string* Gate::dir_ = nullptr;
std::string* Gate::model_ = nullptr;
std::string* Gate::ref_ = nullptr;

}  // namespace

TEST_F(Gate, WithoutToleranceACheckIsABadConfiguration) {
  const std::string bare = *dir_ + "/bare-ref";
  ASSERT_EQ(hd::test::run_cli({"capture", "-m", *model_, "-f", *dir_ + "/golden.txt", "-o", bare})
                .exit_code,
            0);
  const auto r = hd::test::run_cli({"check", "--reference", bare, "-m", *model_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run calibrate first"), std::string::npos) << r.err;
  EXPECT_EQ(
      hd::test::run_cli({"check", "--reference", *dir_ + "/nothing", "-m", *model_}).exit_code, 2);
}

TEST_F(Gate, SameModelAndSettingsPassBitwise) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_}).exit_code, 0);
  const json r = check({}, 0);
  EXPECT_TRUE(r["passed"].get<bool>());
  EXPECT_TRUE(r["first_divergent_tap"].is_null());
  ASSERT_EQ(r["taps"].size(), 1u + 4 * 4 + 1);  // inp_embd, 4 x (kqv, attn, ffn, l_out), norm
  for (const auto& t : r["taps"]) EXPECT_EQ(t["max_abs"].get<double>(), 0.0) << t["name"];
}

TEST_F(Gate, AQuantizedKCacheFirstDivergesInLayerZerosAttention) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_}).exit_code, 0);
  const json r = check({"-ctk", "q8_0"}, 1);
  EXPECT_FALSE(r["passed"].get<bool>());
  EXPECT_EQ(r["first_divergent_tap"], "kqv_out-0");
  EXPECT_EQ(r["taps"][0]["name"], "inp_embd");
  EXPECT_EQ(r["taps"][0]["max_abs"].get<double>(), 0.0);  // nothing before attention moves

  // --jitter-floor only loosens: every tolerance at least what calibrate gave, and at 1.0 x
  // max |ref| the same run passes.
  const json loose = check({"-ctk", "q8_0", "--jitter-floor", "1.0"}, 0);
  for (size_t i = 0; i < r["taps"].size(); ++i) {
    EXPECT_GE(loose["taps"][i]["tolerance"].get<double>(), r["taps"][i]["tolerance"].get<double>());
  }
  const json tiny = check({"-ctk", "q8_0", "--jitter-floor", "1e-12"}, 1);
  for (size_t i = 0; i < r["taps"].size(); ++i) {
    EXPECT_EQ(tiny["taps"][i]["tolerance"].get<double>(), r["taps"][i]["tolerance"].get<double>());
  }
}

TEST_F(Gate, AnotherModelNeedsAllowModelChange) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_}).exit_code, 0);
  const std::string other = *dir_ + "/other.gguf";
  ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-llama", "--seed", "2", "--type",
                               "f16", "-o", other})
                .exit_code,
            0);
  const auto refused = hd::test::run_cli({"check", "--reference", *ref_, "-m", other});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--allow-model-change"), std::string::npos) << refused.err;
  const auto allowed =
      hd::test::run_cli({"check", "--reference", *ref_, "-m", other, "--allow-model-change"});
  EXPECT_EQ(allowed.exit_code, 1) << allowed.err;  // other weights: inp_embd already differs
  EXPECT_NE(allowed.out.find("first divergent tap inp_embd"), std::string::npos) << allowed.out;
}

TEST_F(Gate, MarkdownAndJunitReportsSayTheSame) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_}).exit_code, 0);
  const auto md = hd::test::run_cli(
      {"check", "--reference", *ref_, "-m", *model_, "-ctk", "q8_0", "--format", "markdown"});
  EXPECT_EQ(md.exit_code, 1);
  EXPECT_NE(md.out.find("FAILED"), std::string::npos);
  EXPECT_NE(md.out.find("First divergent tap: **`kqv_out-0`**"), std::string::npos) << md.out;
  const json r = check({"-ctk", "q8_0"}, 1);
  long over = 0;
  for (const auto& t : r["taps"]) over += t["over"].get<bool>() ? 1 : 0;
  ASSERT_GT(over, 0);
  ASSERT_LT(over, 18);
  EXPECT_NE(md.out.find(std::to_string(over) + " of 18 taps over their tolerance"),
            std::string::npos)
      << md.out;
  EXPECT_EQ(std::count(md.out.begin(), md.out.end(), '\n'), 4 + 2 + over)
      << md.out;  // verdict, header, the taps over their tolerance
  const auto md_all = hd::test::run_cli({"check", "--reference", *ref_, "-m", *model_, "-ctk",
                                         "q8_0", "--format", "markdown", "--all-taps"});
  EXPECT_EQ(std::count(md_all.out.begin(), md_all.out.end(), '\n'), 4 + 2 + 18) << md_all.out;

  const std::string xml = *dir_ + "/junit.xml";
  const auto ju = hd::test::run_cli(
      {"check", "--reference", *ref_, "-m", *model_, "-ctk", "q8_0", "--format", "junit"});
  EXPECT_EQ(ju.exit_code, 1);
  hd::test::write_file(xml, ju.out);
  // Well-formed, one test case per tap, a failure for each tap over its tolerance.
  const std::string py =
      "python3 -c \"import sys, xml.etree.ElementTree as E; s = E.parse(sys.argv[1]).getroot(); "
      "c = s.findall('testcase'); f = [x for x in c if x.find('failure') is not None]; "
      "assert len(c) == 18 and int(s.get('failures')) == len(f) and len(f) >= 1, (len(c), len(f)); "
      "assert c[0].get('name') == 'inp_embd' and c[0].find('failure') is None; "
      "assert c[1].find('failure') is not None\" " +
      xml;
  EXPECT_EQ(std::system(py.c_str()), 0) << ju.out;
}

// Decode steps: the reference generates 3 tokens greedily; a check feeds the same tokens one
// at a time. Taps are ordered layer, then block, then step.
TEST_F(Gate, DecodeStepsAreCheckedInForwardOrder) {
  const std::string ref = *dir_ + "/decode-ref";
  ASSERT_EQ(hd::test::run_cli({"capture", "-m", *model_, "-f", *dir_ + "/golden.txt", "--decode",
                               "3", "-o", ref})
                .exit_code,
            0);
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", ref}).exit_code, 0);
  auto run = [&](std::vector<std::string> extra, int want_exit) {
    std::vector<std::string> args = {"check", "--reference", ref, "-m", *model_, "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = hd::test::run_cli(args);
    EXPECT_EQ(r.exit_code, want_exit) << r.err;
    return r.out.empty() ? json() : json::parse(r.out);
  };
  const json same = run({}, 0);
  ASSERT_EQ(same["taps"].size(), (1u + 4 * 4 + 1) * 4);
  EXPECT_EQ(same["decode_steps"], 3);
  EXPECT_EQ(same["taps"][0]["name"], "inp_embd");
  EXPECT_EQ(same["taps"][3]["name"], "inp_embd@token_2");
  EXPECT_EQ(same["taps"][4]["name"], "kqv_out-0");
  EXPECT_EQ(same["taps"][5]["name"], "kqv_out-0@token_0");
  for (const auto& t : same["taps"]) EXPECT_EQ(t["max_abs"].get<double>(), 0.0) << t["name"];

  const json two = run({"--decode", "2", "-ctk", "q8_0"}, 1);
  EXPECT_EQ(two["taps"].size(), (1u + 4 * 4 + 1) * 3);
  EXPECT_EQ(two["first_divergent_tap"], "kqv_out-0");
  EXPECT_EQ(two["taps"][1]["max_abs"].get<double>(), 0.0);  // inp_embd@token_0: a lookup

  const auto more = hd::test::run_cli({"check", "--reference", ref, "-m", *model_, "--decode", "5"});
  EXPECT_EQ(more.exit_code, 2);
  EXPECT_NE(more.err.find("capture it again with --decode 5"), std::string::npos) << more.err;
}

TEST_F(Gate, PerHeadSplitsTheAttentionOutput) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_}).exit_code, 0);
  const json same = check({"--per-head"}, 0);
  ASSERT_EQ(same["per_head"].size(), 4u);  // one kqv_out per layer
  EXPECT_TRUE(same["first_divergent_head"].is_null());
  for (const auto& h : same["per_head"]) {
    EXPECT_EQ(h["max_abs"].size(), 4u);  // tiny-llama: 4 heads
    EXPECT_TRUE(h["concentration"].is_null());  // nothing moved
    EXPECT_TRUE(h["heads_over"].empty());
  }
  const json q8 = check({"-ctk", "q8_0", "--per-head"}, 1);
  const json& first = q8["first_divergent_head"];
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["tap"], "kqv_out-0");
  EXPECT_EQ(first["layer"], 0);
  // The worst head's max |Δ| is the tap's max |Δ|, and concentration = worst / median.
  const double worst = first["max_abs"][first["worst_head"].get<size_t>()].get<double>();
  EXPECT_EQ(worst, q8["taps"][1]["max_abs"].get<double>());
  EXPECT_DOUBLE_EQ(first["concentration"].get<double>(), worst / first["median"].get<double>());
  EXPECT_TRUE(check({}, 0)["per_head"].empty());  // only when asked
}

// qwen3 does not name its projected attention output: its attention tap is kqv_out.
TEST_F(Gate, Qwen3TapsUseKqvOutForAttention) {
  const std::string model = *dir_ + "/tiny-qwen3.gguf", ref = *dir_ + "/qwen3-ref";
  ASSERT_EQ(hd::test::run_cli({"make-model", "--preset", "tiny-qwen3", "--type", "f16", "-o", model})
                .exit_code,
            0);
  const auto cap = hd::test::run_cli({"capture", "-m", model, "-f", *dir_ + "/golden.txt", "-o", ref});
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", ref}).exit_code, 0);
  const auto r = hd::test::run_cli(
      {"check", "--reference", ref, "-m", model, "-ctk", "q8_0", "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["taps"].size(), 1u + 4 * 3 + 1);
  EXPECT_EQ(j["taps"][1]["name"], "kqv_out-0");
  EXPECT_EQ(j["taps"][2]["name"], "ffn_out-0");
  EXPECT_EQ(j["first_divergent_tap"], "kqv_out-0");
}

// Issue 16: the verdict comes first, then only the taps over their tolerance (--all-taps: all).
TEST_F(Gate, TheHumanReportGivesTheVerdictFirstThenTheTapsOver) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_}).exit_code, 0);
  const json r = check({"-ctk", "q8_0"}, 1);
  std::vector<std::string> over, within;
  for (const auto& t : r["taps"]) {
    (t["over"].get<bool>() ? over : within).push_back(t["name"].get<std::string>());
  }
  ASSERT_FALSE(over.empty());
  ASSERT_FALSE(within.empty());
  auto tap_rows = [](const std::string& out) {
    std::vector<std::string> names;
    std::stringstream ss(out);
    bool table = false;
    for (std::string line; std::getline(ss, line);) {
      if (line.rfind("tap ", 0) == 0) {
        table = true;
      } else if (table && !line.empty()) {
        names.push_back(line.substr(0, line.find(' ')));
      } else if (table) {
        break;
      }
    }
    return names;
  };
  const auto human =
      hd::test::run_cli({"check", "--reference", *ref_, "-m", *model_, "-ctk", "q8_0"});
  EXPECT_EQ(human.exit_code, 1);
  EXPECT_EQ(human.out.rfind("FAILED: first divergent tap kqv_out-0; " +
                                std::to_string(over.size()) + " of " +
                                std::to_string(r["taps"].size()) + " taps over their tolerance\n",
                            0),
            0u)
      << human.out;
  EXPECT_EQ(tap_rows(human.out), over) << human.out;
  const auto all = hd::test::run_cli(
      {"check", "--reference", *ref_, "-m", *model_, "-ctk", "q8_0", "--all-taps"});
  EXPECT_EQ(tap_rows(all.out).size(), r["taps"].size()) << all.out;
  const auto pass = hd::test::run_cli({"check", "--reference", *ref_, "-m", *model_});
  EXPECT_EQ(pass.exit_code, 0);
  EXPECT_EQ(pass.out, "passed: every tap within its tolerance (18 taps; --all-taps lists them)\n");
}

// With -o a check is also an experiment of its own kind: the same result and exit code, show
// prints its taps, verify runs it again bitwise, serve lists it by its two models, and a
// reference changed since is refused by verify.
TEST_F(Gate, AStoredCheckShowsVerifiesAndKeepsItsExitCode) {
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_, "--force"}).exit_code, 0);
  const std::string pass = *dir_ + "/pass.hdy", fail = *dir_ + "/fail.hdy";
  const json printed = check({"-o", pass}, 0);
  EXPECT_TRUE(printed["passed"].get<bool>());
  EXPECT_EQ(printed, check({}, 0));
  const json diverged = check({"--ctk", "q8_0", "-o", fail}, 1);  // exit 1, and stored
  EXPECT_FALSE(diverged["passed"].get<bool>());
  const json stored = json::parse(hd::test::run_cli({"show", fail, "--json"}).out);
  EXPECT_EQ(stored["kind"], "check");
  EXPECT_EQ(stored["check"], diverged);
  const auto shown = hd::test::run_cli({"show", fail});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find(diverged["first_divergent_tap"].get<std::string>()), std::string::npos)
      << shown.out;
  const auto verified = hd::test::run_cli({"verify", fail});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find("the check reproduces bitwise"), std::string::npos) << verified.out;
  hd::test::expect_refused({"check", "--reference", *ref_, "-m", *model_, "-o", fail}, "exists");
  // --resume of a finished check gives its verdict again, exit code included (a CI job that
  // resumed after a stop must not pass a failed check).
  const auto resumed = hd::test::run_cli({"check", "--resume", fail});
  EXPECT_EQ(resumed.exit_code, 1) << resumed.err;
  EXPECT_NE(resumed.err.find("already complete"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.out.find("FAILED: first divergent tap"), std::string::npos) << resumed.out;
  // The JSON report may not be the experiment file, under any spelling; nothing is written.
  const std::string both = *dir_ + "/both.hdy";
  hd::test::expect_refused({"check", "--reference", *ref_, "-m", *model_, "-o", both,
                            "--json-out", *dir_ + "/./both.hdy", "--force"},
                           "-o and --json-out name the same file");
  EXPECT_FALSE(std::filesystem::exists(both));
  // A reference without tolerances is refused as without -o, and leaves no file.
  const std::string bare = *dir_ + "/bare-for-o";
  ASSERT_EQ(hd::test::run_cli({"capture", "-m", *model_, "-f", *dir_ + "/golden.txt", "-o", bare})
                .exit_code,
            0);
  hd::test::expect_refused({"check", "--reference", bare, "-m", *model_, "-o", both},
                           "run calibrate first");
  EXPECT_FALSE(std::filesystem::exists(both));

  const json list = hd::serve::list_experiments(hd::serve::Sandbox(*dir_),
                                                hd::serve::PublicPaths(*dir_, *dir_));
  int listed = 0;
  for (const auto& e : list) {
    if (e["name"] != "fail") continue;
    ++listed;
    EXPECT_EQ(e["kind"], "check");
    EXPECT_EQ(e["a"], "tiny-llama-f16.gguf");
    EXPECT_EQ(e["b"], "tiny-llama-f16.gguf");
  }
  EXPECT_EQ(listed, 1) << list.dump();

  // Calibrated again with another safety: the tolerances are not the ones the check read.
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_, "--force", "--safety", "3"})
                .exit_code,
            0);
  const auto refused = hd::test::run_cli({"verify", fail});  // after the integrity line
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("the reference's tolerances.json is not the one this check read"),
            std::string::npos)
      << refused.err;
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", *ref_, "--force"}).exit_code, 0);
  EXPECT_EQ(hd::test::run_cli({"verify", fail}).exit_code, 0);
}

// A tap that is all zeros in the reference and not in the candidate has an infinite relative
// error: stored and printed as "inf" / inf, never a null read back as damage, and never "nan".
TEST_F(Gate, AnInfiniteRelativeErrorIsStoredShownAndVerified) {
  namespace fs = std::filesystem;
  const std::string zeroed = *dir_ + "/zeroed-ref", out = *dir_ + "/zeroed.hdy";
  fs::remove_all(zeroed);
  fs::copy(*ref_, zeroed);
  fs::remove(zeroed + "/tolerances.json");
  const std::string acts = zeroed + "/activations.safetensors";
  hd::store::SafetensorsFile f = hd::store::read_safetensors(acts);
  auto last = std::find_if(f.tensors.rbegin(), f.tensors.rend(), [](const auto& t) {
    return t.name.find('@') == std::string::npos;  // the last prompt tap
  });
  ASSERT_NE(last, f.tensors.rend());
  const std::string tap = last->name;
  std::fill(last->data.begin(), last->data.end(), 0.0f);
  hd::store::write_safetensors(acts, f.tensors, f.metadata, hd::OutputPolicy(true));
  ASSERT_EQ(hd::test::run_cli({"calibrate", "--reference", zeroed}).exit_code, 0);

  const auto printed = hd::test::run_cli(
      {"check", "--reference", zeroed, "-m", *model_, "--format", "json", "-o", out});
  ASSERT_NE(printed.exit_code, 2) << printed.err;
  const json r = json::parse(printed.out);
  bool found = false;
  for (const auto& t : r["taps"]) {
    if (t["name"] != tap) continue;
    found = true;
    EXPECT_EQ(t["rel_err"], "inf") << t;
  }
  EXPECT_TRUE(found) << tap;
  const auto shown = hd::test::run_cli({"show", out});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find(" inf "), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("nan"), std::string::npos) << shown.out;
  EXPECT_EQ(json::parse(hd::test::run_cli({"show", out, "--json"}).out)["check"], r);
  const auto verified = hd::test::run_cli({"verify", out});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  const auto md = hd::test::run_cli(
      {"check", "--reference", zeroed, "-m", *model_, "--format", "markdown", "--all-taps"});
  EXPECT_NE(md.out.find("| inf |"), std::string::npos) << md.out;

  // A NaN in the reference's tap: nothing to compare there, so the tap is over (never a pass),
  // its mean "n/a", and the stored file keeps and verifies it.
  std::fill(last->data.begin(), last->data.end(), std::nanf(""));
  hd::store::write_safetensors(acts, f.tensors, f.metadata, hd::OutputPolicy(true));
  const std::string nan_out = *dir_ + "/nan.hdy";
  const auto with_nan = hd::test::run_cli({"check", "--reference", zeroed, "-m", *model_,
                                           "--format", "json", "-o", nan_out, "--force"});
  EXPECT_EQ(with_nan.exit_code, 1) << with_nan.err;
  for (const auto& t : json::parse(with_nan.out)["taps"]) {
    if (t["name"] == tap) EXPECT_TRUE(t["over"].get<bool>()) << t;
  }
  const auto nan_shown = hd::test::run_cli({"show", nan_out});
  ASSERT_EQ(nan_shown.exit_code, 0) << nan_shown.err;
  EXPECT_EQ(nan_shown.out.find("nan"), std::string::npos) << nan_shown.out;
  EXPECT_NE(nan_shown.out.find("n/a"), std::string::npos) << nan_shown.out;
  EXPECT_EQ(hd::test::run_cli({"verify", nan_out}).exit_code, 0);
}
