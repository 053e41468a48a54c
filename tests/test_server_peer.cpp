// llama-server as the server arms' peer: the pinned tree's real llama-server (scripts/
// llama-server.sh) is started and asked for the top probabilities after a prompt (n_predict 1,
// n_probs), and heterodyne's matching arm must give the same ones, bit for bit: the server
// writes each logprob as a float's exact value, and computes it by get_token_probabilities
// (tools/server/server-common.cpp), which probabilities_as_the_server() follows step for step.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/arm.h"
#include "llama_server.h"
#include "run/text.h"
#include "test_support.h"

using namespace hd;
using test::LlamaServer;
using test::probabilities_as_the_server;

namespace {

std::vector<std::pair<int32_t, float>> heterodyne_top(std::shared_ptr<engine::Model> m,
                                                      const engine::ArmSettings& s,
                                                      const std::vector<int32_t>& prompt, int n) {
  engine::Arm arm(m, s, static_cast<int>(prompt.size()));
  std::vector<float> logits;
  arm.run_chunk(prompt, nullptr, logits, static_cast<int>(prompt.size()) - 1);
  return probabilities_as_the_server(logits.data(), m->info().n_vocab, n);
}

}  // namespace

TEST(ServerPeer, LlamaServerGivesTheServerArmsTopProbabilitiesBitwise) {
  HD_REQUIRE_SHARED();
  ASSERT_TRUE(std::filesystem::exists(HD_LLAMA_SERVER))
      << HD_LLAMA_SERVER << " is missing: the test target builds it (scripts/llama-server.sh)";
  const std::string dir = test::temp_dir("server-peer");
  const std::string model = test::shared_path("models/stories260K.gguf");
  auto m = engine::model_load(model);
  auto prompt = m->tokenize(run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 2000), true);
  prompt.resize(64);
  engine::ArmSettings plain;
  plain.model = model;
  plain.n_threads = 1;
  for (const char* fa : {"off", "on"}) {
    plain.flash_attn = fa;
    SCOPED_TRACE(std::string("-fa ") + fa);
    {
      LlamaServer one({"-m", model, "-c", "256", "-np", "1", "-fa", fa}, dir + "/np1.log");
      ASSERT_TRUE(one.up()) << "llama-server did not come up: " << dir << "/np1.log";
      // A single request without the cache: the plain arm.
      const auto miss = one.top(prompt, 8, false);
      ASSERT_EQ(miss.size(), 8u);
      EXPECT_EQ(miss, heterodyne_top(m, plain, prompt, 8));
      // The same request twice with the cache: the second keeps all but the last token and
      // decodes it alone (--prompt-cache hit).
      (void)one.top(prompt, 8, true);
      const auto hit = one.top(prompt, 8, true);
      engine::ArmSettings cached = plain;
      cached.prompt_cache = "hit";
      EXPECT_EQ(hit, heterodyne_top(m, cached, prompt, 8));
      EXPECT_NE(hit, miss);  // the re-decoded token is another path: the match is not the plain arm's
    }
    for (const bool unified : {true, false}) {
      std::vector<std::string> args = {"-m", model, "-c", "1024", "-np", "4", "-fa", fa};
      args.push_back(unified ? "-kvu" : "-no-kvu");
      LlamaServer four(args, dir + "/np4.log");
      ASSERT_TRUE(four.up()) << "llama-server did not come up: " << dir << "/np4.log";
      engine::ArmSettings slots = plain;
      slots.slots = 4;
      slots.kv_unified = unified ? "on" : "off";
      EXPECT_EQ(four.top(prompt, 8, false), heterodyne_top(m, slots, prompt, 8))
          << (unified ? "-kvu" : "-no-kvu");
    }
  }
}
