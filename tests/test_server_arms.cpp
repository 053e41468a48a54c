// Server arms (engine/server_schedule.h): the measured text decoded among other slots as
// llama-server composes its batches. Known answers: the embedding rows of the measured sequence
// are its own whatever the split (a row map that picked a neighbour's row would show it); one
// ubatch with FA off reproduces every captured point and logit bit for bit; identical server
// arms give exactly 0; a slot of its own and a batch that equals a ubatch give the plain arm.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/arm.h"
#include "engine/server_schedule.h"
#include "errors.h"
#include "run/text.h"
#include "test_support.h"

using namespace hd;

namespace {

std::vector<int32_t> first_chunk(const engine::Model& m, int n) {
  auto t = m.tokenize(
      run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 4000), true);
  t.resize(static_cast<size_t>(n));
  return t;
}

engine::ArmSettings plain(const std::string& model, int ubatch) {
  engine::ArmSettings s;
  s.model = model;
  s.n_ubatch = ubatch;
  s.n_threads = 1;
  return s;
}

struct Pass {
  std::vector<float> logits;
  std::map<std::string, std::vector<float>> points;
};

Pass run_arm(std::shared_ptr<engine::Model> m, const engine::ArmSettings& s,
         const std::vector<std::string>& points, const std::vector<int32_t>& tokens,
         int first_output = 0) {
  engine::Arm arm(m, s, static_cast<int>(tokens.size()));
  engine::Hook hook;
  for (const auto& p : points) hook.capture(p);
  Pass out;
  arm.run_chunk(tokens, &hook, out.logits, first_output);
  for (const auto& p : points) out.points[p] = hook.captured(p);
  return out;
}

}  // namespace

TEST(ServerSchedule, SplitsAsLlamaCppDoes) {
  engine::ServerBatch b;
  for (const int seq : {1, 1, 0, 0, 0, 2}) b.push_back({0, 0, seq, false, -1});
  // One KV stream: the batch in order, n_ubatch at a time.
  EXPECT_EQ(engine::ubatch_split(b, 4, false),
            (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}, {4, 5}}));
  // A stream per slot: consecutive sequence ids from the first unused token (1, then 2: 0 is
  // not 1 + 1), the same count of each; then 1 alone, then 0.
  EXPECT_EQ(engine::ubatch_split(b, 4, true),
            (std::vector<std::vector<int32_t>>{{0, 5}, {1}, {2, 3, 4}}));
}

TEST(ServerSchedule, NeighboursFillTheBatchInSlotOrder) {
  engine::ArmSettings s;
  s.slots = 3;
  s.slot = 1;
  s.neighbours = 2;
  s.n_batch = 8;
  engine::ServerComposer c(s, 64);
  const std::vector<int32_t> tokens = {10, 11, 12, 13, 14, 15};
  std::vector<engine::ServerBatch> plan;
  c.start(tokens, plan);
  c.feed(tokens, 0, 6, 0, 1, plan);
  // Seed 0: both neighbours read a 6-token prompt. Batch 1: slot 0's six, then two of the
  // measured slot 1's; batch 2: slot 0's generated token, four measured, slot 2's first three.
  ASSERT_EQ(plan.size(), 2u);
  ASSERT_EQ(plan[0].size(), 8u);
  EXPECT_EQ(plan[0][5].seq, 0);
  EXPECT_TRUE(plan[0][5].output);  // a prompt's last token: the server samples from it
  EXPECT_EQ(plan[0][6].seq, 1);
  EXPECT_EQ(plan[0][6].measured, 0);
  EXPECT_FALSE(plan[0][6].output);  // first_output 1
  EXPECT_TRUE(plan[0][7].output);
  ASSERT_EQ(plan[1].size(), 8u);
  EXPECT_EQ(plan[1][0].seq, 0);
  EXPECT_EQ(plan[1][0].pos, 6);
  EXPECT_EQ(plan[1][4].measured, 5);
  EXPECT_EQ(plan[1][5].seq, 2);
}

TEST(ServerArm, MeasuredRowsAreItsOwnInEverySplit) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  const auto tokens = first_chunk(*m, 64);
  const std::vector<std::string> points = {"embd", "l_out-0", "l_out-4"};
  const Pass base = run_arm(m, plain(m->info().path, 512), points, tokens);
  for (const bool unified : {true, false}) {
    for (const int seed : {0, 3, 8}) {
      for (const char* cache : {"miss", "hit", "prefix", "reuse"}) {
        engine::ArmSettings s = plain(m->info().path, 7);
        s.slots = 4;
        s.slot = 2;
        s.neighbours = 3;
        s.neighbour_seed = seed;
        s.kv_unified = unified ? "on" : "off";
        s.n_batch = 40;
        s.prompt_cache = std::string(cache) == "reuse" ? "miss" : cache;
        s.cache_reuse = std::string(cache) == "reuse" ? 8 : 0;
        const Pass p = run_arm(m, s, points, tokens, 5);
        const std::string what = std::string("unified ") + (unified ? "on" : "off") + ", seed " +
                                 std::to_string(seed) + ", " + cache;
        EXPECT_EQ(p.points.at("embd"), base.points.at("embd")) << what;  // a lookup: exact
        EXPECT_EQ(p.points.at("l_out-0").size(), base.points.at("l_out-0").size()) << what;
        EXPECT_EQ(p.logits.size(), 59u * static_cast<size_t>(m->info().n_vocab)) << what;
      }
    }
  }
}

TEST(ServerArm, OneUbatchWithFlashAttentionOffIsBitwisePlain) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  const auto tokens = first_chunk(*m, 64);
  const std::vector<std::string> points = {"embd", "l_out-0", "l_out-2", "l_out-4"};
  engine::ArmSettings p = plain(m->info().path, 512);
  p.flash_attn = "off";
  const Pass base = run_arm(m, p, points, tokens, 3);
  engine::ArmSettings s = p;
  s.slots = 4;
  s.slot = 3;
  s.neighbours = 3;  // before it in the batch: its rows are the last 64 of 256
  s.kv_unified = "on";
  const Pass got = run_arm(m, s, points, tokens, 3);
  for (const auto& name : points) EXPECT_EQ(got.points.at(name), base.points.at(name)) << name;
  EXPECT_EQ(got.logits, base.logits);
}

TEST(ServerArm, APatchLandsOnTheMeasuredRowsOnly) {
  HD_REQUIRE_SHARED();
  auto m = engine::model_load(test::shared_path("models/stories260K.gguf"));
  const auto tokens = first_chunk(*m, 32);
  engine::ArmSettings s = plain(m->info().path, 5);
  s.slots = 3;
  s.slot = 1;
  s.neighbours = 2;
  s.neighbour_seed = 4;
  engine::Arm arm(m, s, 32);
  engine::Hook cap;
  cap.capture("l_out-1");
  std::vector<float> base, same, changed;
  arm.run_chunk(tokens, &cap, base);
  engine::Hook put_same;
  put_same.overwrite("l_out-1", 0, cap.captured("l_out-1"));
  arm.run_chunk(tokens, &put_same, same);
  EXPECT_EQ(same, base);
  const auto width = static_cast<size_t>(m->info().n_embd);
  std::vector<float> zeros(width, 0.0f);
  engine::Hook put_zero;
  put_zero.overwrite("l_out-1", 20, zeros);
  arm.run_chunk(tokens, &put_zero, changed);
  const size_t v = static_cast<size_t>(m->info().n_vocab);
  for (size_t pos = 0; pos < 20; ++pos) {  // causal: what comes before the patched row stays
    EXPECT_TRUE(std::equal(base.begin() + static_cast<long>(pos * v),
                           base.begin() + static_cast<long>((pos + 1) * v),
                           changed.begin() + static_cast<long>(pos * v)))
        << pos;
  }
  EXPECT_FALSE(std::equal(base.begin() + static_cast<long>(20 * v),
                          base.begin() + static_cast<long>(21 * v),
                          changed.begin() + static_cast<long>(20 * v)));
}

TEST(ServerArm, KnownAnswersThroughDiff) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("server-arms");
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string t = test::shared_path("corpora/tom-sawyer.txt");
  auto diff = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"diff", "--a", m, "--b", m, "-f", t, "--chunk", "64",
                                     "--max-chunks", "3", "-t", "1", "--no-floor", "-o",
                                     dir + "/" + name + ".hdy"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    return test::rows_text(dir + "/" + name + ".hdy",
                           "select kl, top1_a = top1_b from positions where comparison = 'diff'");
  };
  const std::string zero = diff("plain", {});
  ASSERT_FALSE(zero.empty());
  // A slot of its own among 4, split or unified KV, no neighbours: the plain arm.
  EXPECT_EQ(diff("own-slot", {"--b-slots", "4", "--b-slot", "2"}), zero);
  EXPECT_EQ(diff("own-slot-kvu", {"--b-slots", "4", "--b-slot", "2", "--b-kv-unified", "on"}), zero);
  // A logical batch of 16 is the ubatch of 16 decoded in four calls.
  EXPECT_EQ(diff("batch", {"--a-ub", "16", "--b-batch", "16"}), zero);
  // Identical server arms, neighbours and all: exactly 0.
  EXPECT_EQ(diff("same", {"--slots", "4", "--slot", "1", "--neighbours", "3", "--ub", "7",
                          "--neighbour-seed", "5", "--prompt-cache", "prefix"}),
            zero);
  // One token of each of four slots per ubatch (split KV, ubatch 7): the measured text runs
  // through the one-row kernels, and every position moves.
  EXPECT_NE(diff("one-row", {"--b-slots", "4", "--b-slot", "3", "--b-neighbours", "3", "--ub",
                             "7", "--transplants", "--components"}),
            zero);
  EXPECT_EQ(test::rows_text(dir + "/one-row.hdy",
                            "select count(*) from positions where comparison = 'diff' and kl = 0"),
            test::rows_text(dir + "/one-row.hdy", "select 0"));
  EXPECT_NE(test::rows_text(dir + "/one-row.hdy", "select count(*) from transplants"),
            test::rows_text(dir + "/one-row.hdy", "select 0"));
  // --cache-reuse 8: the first half as a prefix hit computes it (a clean decode of it), the
  // second half runs on a cache whose second quarter was shifted back 8 cells (RoPE twice).
  const std::string half = "select kl from positions where comparison = 'diff' and pos < 32";
  const std::string rest = "select kl from positions where comparison = 'diff' and pos >= 32";
  (void)diff("prefix", {"--b-prompt-cache", "prefix"});
  (void)diff("reuse", {"--b-cache-reuse", "8"});
  EXPECT_EQ(test::rows_text(dir + "/reuse.hdy", half), test::rows_text(dir + "/prefix.hdy", half));
  EXPECT_NE(test::rows_text(dir + "/reuse.hdy", rest), test::rows_text(dir + "/prefix.hdy", rest));
  const auto shown = test::run_cli({"show", dir + "/one-row.hdy"});
  EXPECT_NE(shown.out.find("--slots 4 --slot 3 --neighbours 3"), std::string::npos) << shown.out;
}

TEST(ServerArm, ASweepAttributesTheServerSettings) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("server-sweep");
  const std::string out = dir + "/s.hdy";
  const auto r = test::run_cli({"sweep", "--a", test::shared_path("models/stories260K.gguf"), "-f",
                                test::shared_path("corpora/tom-sawyer.txt"), "--chunk", "64",
                                "--max-chunks", "2", "-t", "1", "--slots", "4", "--slot", "3",
                                "--ub", "7", "--b-neighbours", "3", "--b-kv-unified", "on",
                                "--no-floor", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto shown = test::run_cli({"show", out, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto doc = nlohmann::json::parse(shown.out);
  const auto& sweep = doc.at("sweep");
  EXPECT_EQ(sweep.at("settings"), nlohmann::json::array({"kv_unified", "neighbours"}));
  // A's values are stored although they are the defaults a plain arm's JSON leaves out.
  EXPECT_EQ(sweep.at("a").at("neighbours"), 0);
  EXPECT_EQ(sweep.at("a").at("kv_unified"), "off");
  bool all_four = true;
  for (const auto& c : sweep.at("combinations")) {
    all_four = all_four && c.at("values").contains("neighbours") && c.at("values").contains("kv_unified");
  }
  EXPECT_TRUE(all_four) << sweep.at("combinations").dump();
  const auto text = test::run_cli({"show", out});
  EXPECT_NE(text.out.find("*3"), std::string::npos) << text.out;
}

TEST(ServerArm, ImpossibleServersAreRefusedInOneLine) {
  HD_REQUIRE_SHARED();
  const std::string dir = test::temp_dir("server-refusals");
  const std::string m = test::shared_path("models/stories260K.gguf");
  const std::string t = test::shared_path("corpora/tom-sawyer.txt");
  const std::string out = dir + "/x.hdy";
  auto refused = [&](std::vector<std::string> extra, const std::string& phrase) {
    std::vector<std::string> args = {"diff", "--a", m, "--b", m, "-f", t, "--chunk", "64",
                                     "--max-chunks", "1", "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    test::expect_refused(args, phrase);
    EXPECT_FALSE(std::filesystem::exists(out)) << phrase;
  };
  refused({"--b-slots", "2", "--b-slot", "2"}, "slot 2 is not one of the 2 slots");
  refused({"--b-neighbours", "1"}, "1 neighbours need 2 slots");
  refused({"--b-slots", "64"}, "tokens per slot");
  refused({"--b-prompt-cache", "warm"}, "prompt-cache must be miss, hit or prefix");
  refused({"--b-kv-unified", "yes"}, "kv-unified must be on or off");
  refused({"--b-slots", "0"}, "--b-slots must be at least 1");
  refused({"--b-cache-reuse", "20"}, "cache-reuse 20 needs a reused run of as many tokens");
  refused({"--b-cache-reuse", "4", "--b-prompt-cache", "hit"}, "cache-reuse is a prompt-cache state of its own");
  // A recurrent model splits a batch of several sequences per sequence: not mirrored, refused.
  const std::string mamba = dir + "/mamba.gguf", ids = dir + "/ids.txt";
  ASSERT_EQ(test::run_cli({"make-model", "--arch", "mamba", "-o", mamba}).exit_code, 0);
  std::string text;
  for (int i = 0; i < 64; ++i) text += std::to_string(i % 50 + 1) + " ";
  test::write_file(ids, text);
  test::expect_refused({"diff", "--a", mamba, "--b", mamba, "--tokens", ids, "--chunk", "32",
                        "--b-slots", "2", "-o", out},
                       "keeps a recurrent state, whose batches llama.cpp splits per sequence");
  test::expect_refused({"diff", "--a", mamba, "--b", mamba, "--tokens", ids, "--chunk", "32",
                        "--b-cache-reuse", "4", "-o", out},
                       "keeps a recurrent state, which cannot drop the end of a sequence");
  EXPECT_FALSE(std::filesystem::exists(out));
}
