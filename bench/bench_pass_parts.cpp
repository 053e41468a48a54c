// What a patched pass cannot skip, on the components pair (qwen3-0.6b f16 and its Q4_K_M):
// one whole 128-token pass of an arm vs the same pass started at l_out-26 (the last layer and
// the output head alone), with every position's logits and with the second half's. Prefix reuse
// starts a pass at its point, so the mean patched pass costs about t + (T - t) / 2 for a whole
// pass T and a last-layer pass t: the ratio components can reach on this machine is about
// 2T / (T + t), summed over both arms, before the checks on the first chunk.
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

// range(0): 0 for arm A (f16), 1 for B (Q4_K_M); range(1): the first position with logits.
void pass(benchmark::State& state, bool from_last_layer) {
  const Setup& s = setup();
  const std::string& path = state.range(0) == 0 ? s.big_a : s.big_b;
  static std::map<std::string, std::shared_ptr<engine::Model>> models;
  if (!models.count(path)) models[path] = engine::model_load(path);
  const auto& model = models[path];
  engine::ArmSettings settings;
  settings.model = path;
  settings.n_threads = kThreads;
  engine::Arm arm(model, settings, 128);
  std::vector<int32_t> tokens = model->tokenize(run::read_text_file(s.text), true);
  tokens.resize(128);
  const int first_output = static_cast<int>(state.range(1));
  const std::string start = "l_out-" + std::to_string(model->info().n_layer - 2);
  engine::Hook own;
  own.capture(start);
  arm.run_chunk_view(tokens, &own, first_output);
  // The logits where llama.cpp wrote them, as components' patched passes read them.
  for (auto _ : state) {
    const std::span<const float> logits =
        from_last_layer ? arm.run_from_view(start, own.captured(start), 128, nullptr, first_output)
                        : arm.run_chunk_view(tokens, nullptr, first_output);
    benchmark::DoNotOptimize(logits.data());
  }
}
void BM_PassWhole(benchmark::State& state) { pass(state, false); }
void BM_PassLastLayer(benchmark::State& state) { pass(state, true); }

BENCHMARK(BM_PassWhole)->ArgsProduct({{0, 1}, {0, 64}})->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_PassLastLayer)->ArgsProduct({{0, 1}, {0, 64}})->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

namespace hd::bench {

// 2T / (T + t), T and t summed over both arms; 0 where a pass of them did not run.
static double reach(const std::map<std::string, double>& by_name, const char* half, double* whole,
                    double* last) {
  *whole = *last = 0;
  for (const char* arm : {"0", "1"}) {
    const std::string args = std::string("/") + arm + "/" + half + "/iterations:5";
    const auto w = by_name.find("BM_PassWhole" + args), l = by_name.find("BM_PassLastLayer" + args);
    if (w == by_name.end() || l == by_name.end()) return 0;
    *whole += w->second;
    *last += l->second;
  }
  return 2 * *whole / (*whole + *last);
}

double components_reach(const std::map<std::string, double>& by_name, bool half) {
  double whole = 0, last = 0;
  return reach(by_name, half ? "64" : "0", &whole, &last);
}

void print_pass_parts(const std::map<std::string, double>& by_name) {
  for (const char* half : {"0", "64"}) {
    double whole = 0, last = 0;
    const double r = reach(by_name, half, &whole, &last);
    if (r == 0) return;
    std::printf("  components' reach with prefix reuse (%s)  %.3f   (2T / (T + t), both arms: T %.0f ms, "
                "t %.0f ms)\n", half[0] == '0' ? "all positions" : "--score-from half", r, whole,
                last);
  }
}

}  // namespace hd::bench
