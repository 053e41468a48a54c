// What a server arm costs per scored token against a plain arm, on the big model (qwen3-0.6b's
// f16): one 128-token chunk decoded alone, then as slot 3 of 4 with 0, 1 and 3 neighbours reading
// chunk-long prompts beside it (unified KV, llama-server's batch and ubatch). The neighbours'
// tokens are computed too, so the cost grows with them: about (1 + M) for M neighbours.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "engine/arm.h"
#include "run/text.h"
#include "support.h"

using namespace hd;
using namespace hd::bench;

namespace {

// range(0): -1 for the plain arm, else the neighbours of a 4-slot server arm.
void server_chunk(benchmark::State& state) {
  const Setup& s = setup();
  static std::shared_ptr<engine::Model> model = engine::model_load(s.big_a);
  engine::ArmSettings settings;
  settings.model = s.big_a;
  settings.n_threads = kThreads;
  if (state.range(0) >= 0) {
    settings.slots = 4;
    settings.slot = 3;
    settings.kv_unified = "on";
    settings.n_batch = 2048;
    settings.neighbours = static_cast<int>(state.range(0));
  }
  engine::Arm arm(model, settings, 128);
  std::vector<int32_t> tokens = model->tokenize(run::read_text_file(s.text), true);
  tokens.resize(128);
  std::vector<float> logits;
  for (auto _ : state) arm.run_chunk(tokens, nullptr, logits);
}
void BM_ServerChunk(benchmark::State& state) { server_chunk(state); }

BENCHMARK(BM_ServerChunk)->Arg(-1)->Arg(0)->Arg(1)->Arg(3)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

namespace hd::bench {

void print_server_ratios(const std::map<std::string, double>& by_name) {
  const auto plain = by_name.find("BM_ServerChunk/-1/iterations:3");
  if (plain == by_name.end()) return;
  for (const char* m : {"0", "1", "3"}) {
    const auto it = by_name.find(std::string("BM_ServerChunk/") + m + "/iterations:3");
    if (it == by_name.end()) continue;
    std::printf("  server arm, %s neighbours / plain arm     %.3f   (per scored token; %s)\n", m,
                it->second / plain->second,
                m[0] == '0' ? "target ~1.0" : "the neighbours' tokens are computed too");
  }
}

}  // namespace hd::bench
