// llama-server as generate's peer: the pinned tree's real llama-server generates greedily from a
// prompt (n_predict, n_probs), and heterodyne's generate with the matching arm gives the same
// tokens and, at every generated position, the same top probabilities bit for bit (computed from
// its logits as the server computes them). The same request again is a prompt-cache hit: it
// matches the arm with --prompt-cache hit, and generate, given that arm as B, says whether the
// hit changed any token exactly when the server's two completions differ.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/arm.h"
#include "engine/generation.h"
#include "kinds/generate/generate_decode.h"
#include "llama_server.h"
#include "test_support.h"

using namespace hd;

namespace {

constexpr int kTokens = 24;

// heterodyne's completion with `s`, each position's top-8 as the server computes them.
std::vector<test::LlamaServer::Generated> heterodyne_completion(std::shared_ptr<engine::Model> m,
                                                               const engine::ArmSettings& s,
                                                               const std::vector<int32_t>& prompt) {
  engine::Arm arm(m, s, static_cast<int>(prompt.size()) + kTokens);
  std::vector<test::TopLogprobs> tops;
  const kinds::Completion c = kinds::generate_completion(
      arm, *m, prompt, kTokens, nullptr, [&](std::span<const float> logits) {
        tops.push_back(test::probabilities_as_the_server(logits.data(), m->info().n_vocab, 8));
      });
  std::vector<test::LlamaServer::Generated> out;
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    // Greedy: the chosen token is the top-1, its logprob the server's computation of it.
    const float logprob = tops[i][0].first == c.tokens[i].token ? tops[i][0].second : 0.0f;
    out.push_back({c.tokens[i].token, logprob, tops[i]});
  }
  return out;
}

std::vector<int32_t> ids(const std::vector<test::LlamaServer::Generated>& g) {
  std::vector<int32_t> out;
  for (const auto& t : g) out.push_back(t.id);
  return out;
}

}  // namespace

TEST(GeneratePeer, LlamaServerGeneratesTheSameTokensAndTopProbabilitiesBitwise) {
  HD_REQUIRE_SHARED();
  ASSERT_TRUE(std::filesystem::exists(HD_LLAMA_SERVER))
      << HD_LLAMA_SERVER << " is missing: the test target builds it (scripts/llama-server.sh)";
  const std::string dir = test::temp_dir("generate-peer");
  const std::string model = test::shared_path("models/stories260K.gguf");
  auto m = engine::model_load(model);
  const std::string text = "Once upon a time, there was a little girl named";
  const auto prompt = engine::tokenize_prompt(*m, text);
  const std::string prompts = dir + "/prompts.txt";
  std::ofstream(prompts) << text << "\n";
  engine::ArmSettings plain;
  plain.model = model;
  plain.n_threads = 1;
  for (const char* fa : {"off", "on"}) {
    SCOPED_TRACE(std::string("-fa ") + fa);
    plain.flash_attn = fa;
    test::LlamaServer server({"-m", model, "-c", "256", "-np", "1", "-fa", fa}, dir + "/np1.log");
    ASSERT_TRUE(server.up()) << "llama-server did not come up: " << dir << "/np1.log";
    const auto first = server.complete(prompt, kTokens, 8, true);
    ASSERT_EQ(first.size(), static_cast<size_t>(kTokens));
    EXPECT_EQ(first, heterodyne_completion(m, plain, prompt));
    // The same request again: the slot keeps all but the prompt's last token.
    const auto again = server.complete(prompt, kTokens, 8, true);
    engine::ArmSettings hit = plain;
    hit.prompt_cache = "hit";
    EXPECT_EQ(again, heterodyne_completion(m, hit, prompt));

    // generate itself: A's tokens are the server's first completion; with the hit as B it says
    // whether the hit changed any token, as the server's two completions do.
    const std::string out = dir + "/hit-" + fa + ".hdy";
    const auto made = test::run_cli({"generate", "--a", model, "--b-prompt-cache", "hit", "--prompts",
                                     prompts, "-n", std::to_string(kTokens), "-t", "1", "-fa", fa,
                                     "--no-transplants", "-o", out});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const auto column = [](const std::vector<int32_t>& v) {
      std::string s;
      for (const int32_t id : v) s += std::to_string(id) + "|\n";
      return s;
    };
    EXPECT_EQ(test::rows_text(out, "select token from generate_tokens where arm = 'a' order by i"), column(ids(first)));
    EXPECT_EQ(test::rows_text(out, "select token from generate_tokens where arm = 'b' order by i"), column(ids(again)));
    // The stored top-5 ids are the server's first five, and the stored logprob (an f64 softmax)
    // is the server's: its sum of 32,000 f32 exponentials carries a few 1e-6 of rounding.
    std::vector<int32_t> top5;
    for (const auto& g : first) {
      for (size_t k = 0; k < 5; ++k) top5.push_back(g.top[k].first);
    }
    EXPECT_EQ(test::rows_text(out, "select json_extract(value, '$[0]') from generate_tokens, json_each(top) "
                                   "where arm = 'a' order by i, key"),
              column(top5));
    for (size_t i = 0; i < first.size(); ++i) {
      const std::string stored = test::rows_text(
          out, "select printf('%.17g', logprob) from generate_tokens where arm = 'a' and i = " + std::to_string(i));
      EXPECT_NEAR(std::stod(stored), first[i].logprob, 5e-5) << "token " << i;
    }
    const bool changed = ids(first) != ids(again);
    EXPECT_EQ(test::rows_text(out, "select parted >= 0 from generate_partings"), changed ? "1|\n" : "0|\n");
  }
}
