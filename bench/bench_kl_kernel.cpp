// The KL kernel alone, one thread, per position at qwen3's vocabulary (151,936 tokens), over
// 127 positions of logits per arm (77 MB each: out of cache, as in a run):
//   BM_KlScalarReference  the scalar loop heterodyne used before the kernel (tests/kl_reference.h)
//   BM_KlPatchedPass      KL(A || patched) with A's softmax kept (analysis::KlReference): what
//                         every transplant pass costs. Target: >= 4x faster than the reference.
//   BM_KlDivergence       kl_divergence, both softmaxes (the diff's own KL, once per chunk)
//   BM_ReadBothLogits     reading both arms' logits once: the memory bound
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/kl.h"
#include "kl_reference.h"

namespace {

constexpr size_t kVocab = 151936;
constexpr size_t kPositions = 127;

struct Logits {
  std::vector<float> a, b;
};

// A like a model's logits, B = A plus noise of 0.1 per logit (a quantized arm's size).
const Logits& logits() {
  static const Logits l = [] {
    Logits x;
    std::mt19937_64 g(1);
    std::normal_distribution<float> bulk(0.f, 3.f), noise(0.f, 0.1f);
    x.a.resize(kVocab * kPositions);
    x.b.resize(x.a.size());
    for (size_t i = 0; i < x.a.size(); ++i) {
      x.a[i] = bulk(g);
      x.b[i] = x.a[i] + noise(g);
    }
    return x;
  }();
  return l;
}

std::span<const float> row(const std::vector<float>& x, size_t i) {
  return {x.data() + i * kVocab, kVocab};
}

void per_position(benchmark::State& state) {
  // Seconds per position (printed with an SI prefix: 340u is 340 µs).
  state.counters["per_position"] = benchmark::Counter(
      static_cast<double>(kPositions),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Times `kl(position)` over every position, per position.
template <class Kl>
void every_position(benchmark::State& state, Kl kl) {
  for (auto _ : state) {
    double sum = 0;
    for (size_t i = 0; i < kPositions; ++i) sum += kl(i);
    benchmark::DoNotOptimize(sum);
  }
  per_position(state);
}

void BM_KlScalarReference(benchmark::State& state) {
  const Logits& l = logits();
  std::vector<double> scratch;
  every_position(state, [&](size_t i) {
    return hd::testing::kl_scalar_reference(row(l.a, i), row(l.b, i), scratch);
  });
}

void BM_KlPatchedPass(benchmark::State& state) {
  const Logits& l = logits();
  hd::analysis::KlReference ref;
  ref.set(l.a, kVocab);  // once per chunk in a run, for its ~2 x 57 passes: not timed
  every_position(state, [&](size_t i) { return ref.kl_to(i, row(l.b, i)); });
}

void BM_KlDivergence(benchmark::State& state) {
  const Logits& l = logits();
  hd::analysis::ScoreScratch scratch;
  every_position(state, [&](size_t i) {
    return hd::analysis::kl_divergence(row(l.a, i), row(l.b, i), scratch);
  });
}

void BM_ReadBothLogits(benchmark::State& state) {
  const Logits& l = logits();
  for (auto _ : state) {
    float sum[16] = {};
    for (size_t i = 0; i + 16 <= l.a.size(); i += 16) {
      for (size_t j = 0; j < 16; ++j) sum[j] += l.a[i + j] + l.b[i + j];
    }
    benchmark::DoNotOptimize(sum);
  }
  per_position(state);
}

BENCHMARK(BM_KlScalarReference)->Unit(benchmark::kMillisecond)->Repetitions(3);
BENCHMARK(BM_KlPatchedPass)->Unit(benchmark::kMillisecond)->Repetitions(3);
BENCHMARK(BM_KlDivergence)->Unit(benchmark::kMillisecond)->Repetitions(3);
BENCHMARK(BM_ReadBothLogits)->Unit(benchmark::kMillisecond)->Repetitions(3);

}  // namespace

namespace hd::bench {

void print_kl_kernel_ratios(const std::map<std::string, double>& median) {
  auto has = [&](const char* n) { return median.count(n) > 0; };
  if (!has("BM_KlScalarReference") || !has("BM_KlPatchedPass")) return;
  const double ref = median.at("BM_KlScalarReference"), pass = median.at("BM_KlPatchedPass");
  std::printf("  KL per position, scalar reference / a patched pass's  %.2f   target >= 4\n",
              ref / pass);
  if (has("BM_KlDivergence")) {
    std::printf("  KL per position, scalar reference / kl_divergence     %.2f\n",
                ref / median.at("BM_KlDivergence"));
  }
  if (has("BM_ReadBothLogits")) {
    std::printf("  a patched pass's KL / reading both arms' logits once  %.2f   (1: the memory bound)\n",
                pass / median.at("BM_ReadBothLogits"));
  }
}

}  // namespace hd::bench
