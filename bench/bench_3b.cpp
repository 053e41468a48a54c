// The 3B class at long chunks (`make bench-3b`, not in `make bench` nor CI: about 70 minutes on
// two cores). The llama3.2-3b preset (Llama-3.2-3B's shapes: 28 layers, n_embd 3072, a 128k
// vocabulary) f16 against its Q4_K_M, chunks of 512 tokens, -t 2, the default diff as users run
// it (both arms' floors on their sample of chunks, every position scored, the residuals):
//   BM_3BPeer/N / BM_3BDiff/N   time against llama-perplexity's base pass + KL pass over the
//                               same N chunks. Target <= 1.3 for runs of 32 chunks or more (the
//                               floor's sample is at least 4 chunks, issue 45 part 1); 16 shown.
//   BM_3BDiff/N's peak RSS      against the two model files. Target <= 1.15.
//   BM_3BDiff/N / BM_3BDiff/4   peak RSS over N chunks against 4: flat, target <= 1.02.
// --benchmark_filter='/32/' runs the 32-chunk pair alone (about 40 minutes).
// The models (6.4 GB and 1.9 GB) are the ones bench_mid_size.cpp makes, into the same cache.
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

constexpr int kChunk = 512;

const Pair& pair() { return llama3b_pair(); }

std::map<int, long> g_rss_kb;  // the default diff's peak RSS by chunks

void BM_3BPeer(benchmark::State& state) {
  const Pair& p = pair();
  const std::string chunks = std::to_string(state.range(0));
  const std::string kld = setup().dir + "/3b-base.kld";
  const std::vector<std::string> common = {"-f", p.text, "-c", std::to_string(kChunk),
                                           "-b", std::to_string(kChunk), "-t",
                                           std::to_string(kThreads), "--chunks", chunks,
                                           "--kl-divergence-base", kld};
  for (auto _ : state) {
    std::vector<std::string> base = {hd::build::kLlamaPerplexity, "-m", p.a};
    base.insert(base.end(), common.begin(), common.end());
    std::vector<std::string> kl = {hd::build::kLlamaPerplexity, "-m", p.b};
    kl.insert(kl.end(), common.begin(), common.end());
    kl.push_back("--kl-divergence");
    run(base);
    run(kl);
  }
  fs::remove(kld);  // a 128k vocabulary's log-probabilities at 255 positions a chunk: 64 MB each
}

void default_diff(benchmark::State& state) {
  const Pair& p = pair();
  const int chunks = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const Child c = run({setup().bin, "diff", "--a", p.a, "--b", p.b, "--text-file",
                         p.text, "--chunk", std::to_string(kChunk), "--max-chunks",
                         std::to_string(chunks), "-t", std::to_string(kThreads), "-o",
                         setup().dir + "/3b.hdy", "--force"});
    g_rss_kb[chunks] = c.max_rss_kb;
  }
}
void BM_3BDiff(benchmark::State& state) { default_diff(state); }

BENCHMARK(BM_3BPeer)->Arg(32)->Arg(16)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_3BDiff)->Arg(32)->Arg(16)->Arg(4)->Unit(benchmark::kSecond)->Iterations(1);

class Medians : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> seconds;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) seconds[r.benchmark_name()] = r.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  setup();
  Medians m;
  benchmark::RunSpecifiedBenchmarks(&m);
  if (m.seconds.empty()) return 0;  // --benchmark_list_tests, or a filter that ran none
  const Pair& p = pair();
  const double files = static_cast<double>(fs::file_size(p.a) + fs::file_size(p.b));
  std::printf("\nratios (same invocation; llama3.2-3b f16 vs Q4_K_M, chunks of %d, -t %d):\n",
              kChunk, kThreads);
  for (const int n : {32, 16}) {
    const std::string tail = "/" + std::to_string(n) + "/iterations:1";
    const auto peer = m.seconds.find("BM_3BPeer" + tail);
    const auto diff = m.seconds.find("BM_3BDiff" + tail);
    if (peer != m.seconds.end() && diff != m.seconds.end()) {
      std::printf("  3B, %d chunks: default diff / (peer base + KL)  %.3f   %s (%.0f s vs %.0f s)\n",
                  n, diff->second / peer->second,
                  n >= 32 ? "target <= 1.3" : "(no target below 32 chunks)", diff->second,
                  peer->second);
    }
    if (g_rss_kb.count(n)) {
      std::printf("  3B, %d chunks: peak RSS / the two model files   %.3f   target <= 1.15 "
                  "(%ld MiB vs %.0f MiB)\n",
                  n, static_cast<double>(g_rss_kb[n]) * 1024.0 / files, g_rss_kb[n] / 1024,
                  files / 1048576.0);
    }
    if (g_rss_kb.count(n) && g_rss_kb.count(4)) {
      std::printf("  3B: peak RSS %d chunks / 4 chunks                %.3f   target <= 1.02 "
                  "(%ld vs %ld MiB)\n",
                  n, static_cast<double>(g_rss_kb[n]) / static_cast<double>(g_rss_kb[4]),
                  g_rss_kb[n] / 1024, g_rss_kb[4] / 1024);
    }
  }
  return 0;
}
