// What generate costs per generated token against llama.cpp's own generation on the same arm,
// on the big model (qwen3-0.6b's f16), 2 threads: a 32-token prompt decoded as one batch, then 64
// tokens one decode step each. The baseline is what every llama.cpp generator does per token (one
// llama_decode of the chosen token, its logits, an argmax); generate adds the full-vocabulary
// softmax, the top-5 and the end-of-generation check. The transplants at a parting and the
// store's rows come once per prompt, not per token.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "engine/arm.h"
#include "kinds/generate/generate_decode.h"
#include "run/text.h"
#include "support.h"

using namespace hd;
using namespace hd::bench;

namespace {

constexpr int kGenerated = 64;

struct Prepared {
  std::shared_ptr<engine::Model> model;
  engine::ArmSettings settings;
  std::vector<int32_t> prompt;
};

const Prepared& prepared() {
  static const Prepared p = [] {
    const Setup& s = setup();
    Prepared out{engine::model_load(s.big_a), {}, {}};
    out.settings.model = s.big_a;
    out.settings.n_threads = kThreads;
    out.prompt = out.model->tokenize(run::read_text_file(s.text), true);
    if (out.prompt.size() < 32) {
      std::fprintf(stderr, "bench_generate: the bench text gives fewer than 32 tokens\n");
      std::exit(1);
    }
    out.prompt.resize(32);
    return out;
  }();
  return p;
}

// llama.cpp's own generation: the prompt, then one decode step per token, argmax.
void BM_GenerateLlamaSteps(benchmark::State& state) {
  const Prepared& p = prepared();
  engine::Arm arm(p.model, p.settings, static_cast<int>(p.prompt.size()) + kGenerated);
  std::vector<float> logits;
  const auto n = static_cast<int32_t>(p.prompt.size());
  for (auto _ : state) {
    arm.run_chunk(p.prompt, nullptr, logits, n - 1);
    for (int i = 0; i < kGenerated; ++i) {
      const auto t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (i + 1 < kGenerated) arm.run_step(t, n + i, nullptr, logits);
    }
  }
}

// generate's completion of the same prompt: the same decodes, and each position scored.
void BM_GenerateCompletion(benchmark::State& state) {
  const Prepared& p = prepared();
  engine::Arm arm(p.model, p.settings, static_cast<int>(p.prompt.size()) + kGenerated);
  for (auto _ : state) {
    const kinds::Completion c = kinds::generate_completion(arm, *p.model, p.prompt, kGenerated, nullptr);
    // An end-of-generation token would stop it early and flatter the per-token cost.
    if (c.tokens.size() != static_cast<size_t>(kGenerated)) state.SkipWithError("generation ended early");
  }
}

BENCHMARK(BM_GenerateLlamaSteps)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_GenerateCompletion)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

namespace hd::bench {

void print_generate_ratios(const std::map<std::string, double>& by_name) {
  const auto base = by_name.find("BM_GenerateLlamaSteps/iterations:3");
  const auto ours = by_name.find("BM_GenerateCompletion/iterations:3");
  if (base == by_name.end() || ours == by_name.end()) return;
  std::printf("  generate / llama.cpp's decode steps      %.3f   (per generated token: %.2f ms vs "
              "%.2f ms; target ~1.0)\n",
              ours->second / base->second, ours->second / kGenerated, base->second / kGenerated);
}

}  // namespace hd::bench
