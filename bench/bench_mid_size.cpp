// A mid-size model: the llama3.2-3b preset (Llama-3.2-3B's shapes: 28 layers, n_embd 3072,
// 128k vocabulary) f16 vs its Q4_K_M, 1 chunk of 128 tokens, -t 2:
//   BM_MidPeer / BM_MidDiff        diff (--score-from half, no floor) vs llama-perplexity's base
//                                  pass + KL pass. Target <= 1.0.
//   BM_MidComponents{FullPasses,PrefixReuse}  --components with and without prefix reuse.
//                                  Target >= 1.4x; the reuse run's peak RSS <= 1.15 x the two
//                                  model files.
// The models (6.4 GB and 1.9 GB) are made on first use, into the benchmark cache; about 25
// minutes in all on two cores. --benchmark_filter='^BM_Mid' runs these alone.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "build_info.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace hd::bench;

namespace {

const Pair& mid() { return llama3b_pair(); }

long g_reuse_rss_kb = -1;

void BM_MidPeer(benchmark::State& state) {
  const Pair& m = mid();
  const std::string kld = setup().dir + "/mid-base.kld";
  const std::vector<std::string> common = {"-f", setup().text, "-c", "128", "-b", "128", "-t",
                                           std::to_string(kThreads), "--chunks", "1",
                                           "--kl-divergence-base", kld};
  for (auto _ : state) {
    std::vector<std::string> base = {hd::build::kLlamaPerplexity, "-m", m.a};
    base.insert(base.end(), common.begin(), common.end());
    std::vector<std::string> kl = {hd::build::kLlamaPerplexity, "-m", m.b};
    kl.insert(kl.end(), common.begin(), common.end());
    kl.push_back("--kl-divergence");
    run(base);
    run(kl);
  }
}

std::vector<std::string> mid_diff(const std::string& out) {
  const Pair& m = mid();
  return {setup().bin, "diff", "--a", m.a, "--b", m.b, "--text-file", setup().text, "--chunk",
          "128", "--max-chunks", "1", "-t", std::to_string(kThreads), "--no-floor", "-o", out,
          "--force"};
}

void BM_MidDiff(benchmark::State& state) {
  for (auto _ : state) {
    auto args = mid_diff(setup().dir + "/mid.hdy");
    args.insert(args.end(), {"--score-from", "half"});
    run(args);
  }
}

void mid_components(benchmark::State& state, bool reuse) {
  for (auto _ : state) {
    auto args = mid_diff(setup().dir + (reuse ? "/mid-reuse.hdy" : "/mid-full.hdy"));
    args.push_back("--components");
    if (!reuse) args.push_back("--no-prefix-reuse");
    const Child c = run(args);
    if (reuse) g_reuse_rss_kb = c.max_rss_kb;
  }
}
void BM_MidComponentsFullPasses(benchmark::State& state) { mid_components(state, false); }
void BM_MidComponentsPrefixReuse(benchmark::State& state) { mid_components(state, true); }

BENCHMARK(BM_MidPeer)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_MidDiff)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_MidComponentsFullPasses)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_MidComponentsPrefixReuse)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

namespace hd::bench {

void print_mid_size_ratios(const std::map<std::string, double>& median) {
  auto has = [&](const char* n) { return median.count(n) > 0; };
  if (has("BM_MidDiff") && has("BM_MidPeer")) {
    std::printf("  3B: diff / (peer base + KL pass)        %.3f   target <= 1.0\n",
                median.at("BM_MidDiff") / median.at("BM_MidPeer"));
  }
  if (has("BM_MidComponentsFullPasses") && has("BM_MidComponentsPrefixReuse")) {
    std::printf("  3B: components full passes / reuse      %.3f   target >= 1.4\n",
                median.at("BM_MidComponentsFullPasses") / median.at("BM_MidComponentsPrefixReuse"));
  }
  if (g_reuse_rss_kb > 0) {
    const double files = static_cast<double>(fs::file_size(mid().a) + fs::file_size(mid().b));
    std::printf("  3B: components peak RSS / model files   %.3f   target <= 1.15 (%ld KiB)\n",
                static_cast<double>(g_reuse_rss_kb) * 1024.0 / files, g_reuse_rss_kb);
  }
}

}  // namespace hd::bench
