// heterodyne's benchmarks, each reported as a ratio against a baseline measured in the same
// invocation (never as absolute times in tests):
//   1. diff (no floor, no residual save) vs llama-perplexity's base pass + KL pass, same model
//      (qwen3-0.6b shapes), text, chunks, threads and scored positions (the second half of each
//      chunk; llama-perplexity with -b 128, one sequence per decode as ours). Target <= 1.10.
//      And over 32 chunks, the default diff (both floors on their sample of chunks) vs the
//      same peer: target <= 1.3, beside --no-floor and --floor-chunks all.
//   2. one chunk capturing every l_out-N vs the same chunk with no hook. Target <= 1.05.
//   3. peak RSS of a diff over 16 chunks vs over 4 chunks. Target: flat (~1.0).
//   4. diff --components (both directions) with prefix reuse vs one full pass per patch, on the
//      big model, 2 chunks of 128 tokens; the two stored results must be bitwise identical.
//      Target >= 1.5x, and >= 1.7x with --score-from half; the bytes the reuse run writes to
//      storage besides its experiment file: 0. (Several minutes: filter them out with
//      --benchmark_filter if in a hurry.)
//   5. diff --routing vs the same diff, tiny-qwen3moe (8 experts, 2 used) vs its Q4_K_M, 4 chunks
//      of 128 tokens. Target <= 1.05. And diff --routing-transplant vs the same diff: about
//      2 × (1 + MoE layers) passes more a chunk (no target: it is the work asked for).
//   6. (bench_pass_parts.cpp) a whole pass vs a pass from the last layer, per arm of the
//      components pair: what prefix reuse can reach on this machine.
//   7. (bench_kl_kernel.cpp) the KL kernel per position vs the scalar loop before it (>= 4x) and
//      vs reading both arms' logits once.
//   8. (bench_mid_size.cpp) the llama3.2-3b pair: diff vs peer, components, peak RSS.
//   9. (bench_load.cpp) the default diff of a small pair with 0, 1 or 2 cores held by other
//      processes, at the default threads, -t 2 and -t 1.
// Models are made once into ~/.cache/heterodyne/bench (make-model, quantize).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "analysis/compare.h"
#include "build_info.h"
#include "engine/arm.h"
#include "engine/model_maker.h"
#include "engine/points.h"
#include "engine/quantize.h"
#include "run/session.h"
#include "store/experiment.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace hd;
using namespace hd::bench;

namespace {

const int kChunks = 4;

void peer_base_plus_kl(benchmark::State& state, int chunks, const std::string& text) {
  const Setup& s = setup();
  const std::string peer = build::kLlamaPerplexity;
  const std::string kld = s.dir + "/base.kld";
  const std::vector<std::string> common = {"-f",
                                           text,
                                           "-c",
                                           "128",
                                           "-b",
                                           "128",
                                           "-t",
                                           std::to_string(kThreads),
                                           "--chunks",
                                           std::to_string(chunks),
                                           "--kl-divergence-base",
                                           kld};
  for (auto _ : state) {
    std::vector<std::string> base = {peer, "-m", s.big_a};
    base.insert(base.end(), common.begin(), common.end());
    std::vector<std::string> kl = {peer, "-m", s.big_b};
    kl.insert(kl.end(), common.begin(), common.end());
    kl.push_back("--kl-divergence");
    bench::run(base);
    bench::run(kl);
  }
}
void BM_PeerBasePlusKl(benchmark::State& state) {
  peer_base_plus_kl(state, kChunks, setup().text);
}

// The diff of the big pair, --score-from half (the peer's positions, so both compute and score
// the same logits), with `extra` flags.
void heterodyne_diff(benchmark::State& state, std::vector<std::string> extra,
                     int chunks = kChunks) {
  const Setup& s = setup();
  const std::string& text = chunks > kChunks ? s.long_text : s.text;
  for (auto _ : state) {
    std::vector<std::string> args = {s.bin,        "diff",   "--a",          s.big_a,
                                     "--b",        s.big_b,  "--text-file",  text,
                                     "--chunk",    "128",    "--max-chunks", std::to_string(chunks),
                                     "-t",         std::to_string(kThreads), "--score-from",
                                     "half",       "-o",     s.dir + "/bench.hdy",
                                     "--force"};
    args.insert(args.end(), extra.begin(), extra.end());
    bench::run(args);
  }
}
void BM_HeterodyneDiff(benchmark::State& state) { heterodyne_diff(state, {"--no-floor"}); }
// Both floors: one more pass of each arm per chunk (A′ and B′).
void BM_HeterodyneDiffBothFloors(benchmark::State& state) { heterodyne_diff(state, {}); }
// The lens: 2 × n_layer more passes per chunk, and three full-vocabulary KLs per layer and
// position.
void BM_HeterodyneDiffLens(benchmark::State& state) {
  heterodyne_diff(state, {"--no-floor", "--lens"});
}
// What users run: the default diff over 32 chunks, its floor (both arms, two splits) on the
// default sample of chunks (analysis/floor_sample.h: 4 of 32), beside --no-floor and every chunk.
const int kLongChunks = 32;
void BM_PeerBasePlusKl32(benchmark::State& state) {
  peer_base_plus_kl(state, kLongChunks, setup().long_text);
}
void BM_HeterodyneDiffNoFloor32(benchmark::State& state) {
  heterodyne_diff(state, {"--no-floor"}, kLongChunks);
}
void BM_HeterodyneDiffDefault32(benchmark::State& state) { heterodyne_diff(state, {}, kLongChunks); }
void BM_HeterodyneDiffEveryFloor32(benchmark::State& state) {
  heterodyne_diff(state, {"--floor-chunks", "all"}, kLongChunks);
}

// One 128-token chunk of the big model, with or without a hook capturing every l_out-N.
void chunk_pass(benchmark::State& state, bool capture) {
  const Setup& s = setup();
  static std::shared_ptr<engine::Model> model = engine::model_load(s.big_a);
  engine::ArmSettings settings;
  settings.model = s.big_a;
  settings.n_threads = kThreads;
  engine::Arm arm(model, settings, 128);
  std::vector<int32_t> tokens = model->tokenize(run::read_text_file(s.text), true);
  tokens.resize(128);
  std::vector<float> logits;
  for (auto _ : state) {
    engine::Hook hook;
    if (capture) {
      for (int l = 0; l < model->info().n_layer; ++l) {
        hook.capture("l_out-" + std::to_string(l));  // qwen3's residual (heterodyne points)
      }
    }
    arm.run_chunk(tokens, capture ? &hook : nullptr, logits);
  }
}
void BM_ChunkNoHook(benchmark::State& state) { chunk_pass(state, false); }
void BM_ChunkCaptureEveryLayer(benchmark::State& state) { chunk_pass(state, true); }

// Bytes the prefix-reuse run of components caused to be written to storage, and the size of
// its experiment file: prefix reuse writes nothing else.
long g_reuse_written = -1, g_reuse_file = -1;

void components(benchmark::State& state, bool reuse, bool half) {
  const Setup& s = setup();
  const std::string out = s.dir + (reuse ? "/components-reuse" : "/components-full") +
                          (half ? "-half.hdy" : ".hdy");
  for (auto _ : state) {
    const long before = children_written_bytes();
    std::vector<std::string> args = {
        s.bin,          "diff",
        "--a",          s.big_a,
        "--b",          s.big_b,
        "--text-file",  s.text,
        "--chunk",      "128",
        "--max-chunks", "2",
        "-t",           std::to_string(kThreads),
        "--no-floor",   "--components",
        "-o",           out,
        "--force"};
    if (!reuse) args.push_back("--no-prefix-reuse");
    if (half) args.insert(args.end(), {"--score-from", "half"});
    bench::run(args);
    if (reuse && !half) {
      g_reuse_written = children_written_bytes() - before;
      g_reuse_file = static_cast<long>(std::filesystem::file_size(out));
    }
  }
}
void BM_ComponentsFullPasses(benchmark::State& state) { components(state, false, false); }
void BM_ComponentsPrefixReuse(benchmark::State& state) { components(state, true, false); }
void BM_ComponentsFullPassesHalf(benchmark::State& state) { components(state, false, true); }
void BM_ComponentsPrefixReuseHalf(benchmark::State& state) { components(state, true, true); }

// The MoE diff, with extra analysis flags.
void moe_diff(benchmark::State& state, std::vector<std::string> extra) {
  const Setup& s = setup();
  for (auto _ : state) {
    std::vector<std::string> args = {s.bin, "diff", "--a", s.moe_a, "--b", s.moe_b, "--text-file",
                                     s.text, "--chunk", "128", "--max-chunks",
                                     std::to_string(kChunks), "-t", std::to_string(kThreads),
                                     "-o", s.dir + "/moe.hdy", "--force"};
    args.insert(args.end(), extra.begin(), extra.end());
    bench::run(args);
  }
}
void BM_MoeDiff(benchmark::State& state) { moe_diff(state, {}); }
void BM_MoeDiffRouting(benchmark::State& state) { moe_diff(state, {"--routing"}); }
void BM_MoeDiffRoutingTransplant(benchmark::State& state) {
  moe_diff(state, {"--routing-transplant"});
}

std::map<int, long> g_rss;
void BM_PeakRss(benchmark::State& state) {
  const Setup& s = setup();
  const int chunks = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const Child c = bench::run({s.bin, "diff", "--a", s.small, "--b-quant", "Q4_0", "--text-file", s.text,
                         "--chunk", "128", "--max-chunks", std::to_string(chunks), "-t",
                         std::to_string(kThreads), "-o", s.dir + "/rss.hdy", "--force"});
    g_rss[chunks] = c.max_rss_kb;
  }
  state.counters["peak_rss_MiB"] = static_cast<double>(g_rss[chunks]) / 1024.0;
}

// Interleaved so that machine noise hits baseline and candidate alike.
BENCHMARK(BM_PeerBasePlusKl)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_HeterodyneDiff)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_HeterodyneDiffBothFloors)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_HeterodyneDiffLens)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_PeerBasePlusKl32)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_HeterodyneDiffNoFloor32)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_HeterodyneDiffDefault32)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_HeterodyneDiffEveryFloor32)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ChunkNoHook)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(3);
BENCHMARK(BM_ChunkCaptureEveryLayer)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(3);
BENCHMARK(BM_PeakRss)->Arg(4)->Arg(16)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_MoeDiff)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_MoeDiffRouting)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_MoeDiffRoutingTransplant)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_ComponentsFullPasses)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ComponentsPrefixReuse)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ComponentsFullPassesHalf)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ComponentsPrefixReuseHalf)->Unit(benchmark::kSecond)->Iterations(1);

// Keeps the median real time of every benchmark to print the ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> median;
  std::map<std::string, double> by_name;  // every run by its whole name, arguments included
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      // Iterations by name, arguments included; aggregates too ("…_median").
      if (r.run_type == Run::RT_Iteration || r.aggregate_name == "median")
        by_name[r.benchmark_name()] = r.GetAdjustedRealTime();
      if (r.aggregate_name == "median" ||
          (r.run_type == Run::RT_Iteration && !median.count(r.run_name.function_name)))
        median[r.run_name.function_name] = r.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

// "yes" when two stored experiments hold bitwise the same rows, else the first difference.
static std::string same_results(const std::string& a, const std::string& b) {
  const auto x = store::Experiment::open(setup().dir + "/" + a, false);
  const auto y = store::Experiment::open(setup().dir + "/" + b, false);
  for (int c : x.finished_chunks()) {
    if (auto m = analysis::first_mismatch(x.read_chunk(c), y.read_chunk(c))) return "NO: " + *m;
  }
  return "yes";
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  setup();
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto ratio = [&](const char* a, const char* b) {
    return reporter.median[a] / reporter.median[b];
  };
  std::printf("\nratios (medians, same invocation):\n");
  // A ratio only where both of its runs ran (--benchmark_filter): never a NaN on screen.
  const auto both = [&](const char* a, const char* b) {
    return reporter.median.count(a) > 0 && reporter.median.count(b) > 0;
  };
  if (both("BM_HeterodyneDiff", "BM_PeerBasePlusKl"))
    std::printf("  diff / (peer base + KL pass)            %.3f   target <= 1.10\n",
                ratio("BM_HeterodyneDiff", "BM_PeerBasePlusKl"));
  if (both("BM_HeterodyneDiffBothFloors", "BM_PeerBasePlusKl"))
    std::printf("  diff with both floors / (peer base + KL) %.3f   (4 chunks: the floor on every one)\n",
                ratio("BM_HeterodyneDiffBothFloors", "BM_PeerBasePlusKl"));
  if (both("BM_HeterodyneDiffDefault32", "BM_PeerBasePlusKl32")) {
    std::printf("  32 chunks: default diff / (peer base + KL) %.3f   target <= 1.3 (floor on 4 of 32)\n",
                ratio("BM_HeterodyneDiffDefault32", "BM_PeerBasePlusKl32"));
    if (both("BM_HeterodyneDiffNoFloor32", "BM_PeerBasePlusKl32"))
      std::printf("  32 chunks: --no-floor / (peer base + KL)   %.3f\n",
                  ratio("BM_HeterodyneDiffNoFloor32", "BM_PeerBasePlusKl32"));
    if (both("BM_HeterodyneDiffEveryFloor32", "BM_PeerBasePlusKl32"))
      std::printf("  32 chunks: --floor-chunks all / (peer)     %.3f   (the floor on every chunk)\n",
                  ratio("BM_HeterodyneDiffEveryFloor32", "BM_PeerBasePlusKl32"));
  }
  if (both("BM_HeterodyneDiffLens", "BM_HeterodyneDiff"))
    std::printf("  diff --lens / diff                      %.3f   (2 x n_layer passes more)\n",
                ratio("BM_HeterodyneDiffLens", "BM_HeterodyneDiff"));
  if (both("BM_ChunkCaptureEveryLayer", "BM_ChunkNoHook"))
    std::printf("  capture every l_out-N / no hook         %.3f   target <= 1.05\n",
                ratio("BM_ChunkCaptureEveryLayer", "BM_ChunkNoHook"));
  if (g_rss[4] > 0 && g_rss[16] > 0)
    std::printf("  peak RSS 16 chunks / 4 chunks           %.3f   target ~1.0 (%ld vs %ld KiB)\n",
                static_cast<double>(g_rss[16]) / static_cast<double>(g_rss[4]), g_rss[16], g_rss[4]);
  if (both("BM_MoeDiffRouting", "BM_MoeDiff")) {
    std::printf("  MoE diff --routing / the same diff      %.3f   target <= 1.05\n",
                ratio("BM_MoeDiffRouting", "BM_MoeDiff"));
  }
  if (both("BM_MoeDiffRoutingTransplant", "BM_MoeDiff")) {
    std::printf("  MoE --routing-transplant / the same diff %.3f  (2 x (1 + MoE layers) passes more)\n",
                ratio("BM_MoeDiffRoutingTransplant", "BM_MoeDiff"));
  }
  // Components against what prefix reuse can reach (bench_pass_parts.cpp, this invocation),
  // with the default diff's cost against the peer beside it: the two waits users meet.
  const auto share_of_reach = [&](double measured, bool half) {
    const double r = components_reach(reporter.by_name, half);
    if (r > 0) {
      std::printf("      %.1f %% of prefix reuse's reach (%.3f)   target >= 95 %%\n",
                  100.0 * measured / r, r);
    }
  };
  if (both("BM_ComponentsFullPasses", "BM_ComponentsPrefixReuse")) {
    const double r = ratio("BM_ComponentsFullPasses", "BM_ComponentsPrefixReuse");
    std::printf(
        "  components: full passes / prefix reuse  %.3f   target >= 1.5; bitwise identical: %s\n",
        r, same_results("components-full.hdy", "components-reuse.hdy").c_str());
    share_of_reach(r, false);
    std::printf("  components prefix reuse wrote %ld bytes to storage; its experiment file is %ld\n",
                g_reuse_written, g_reuse_file);
  }
  if (both("BM_ComponentsFullPassesHalf", "BM_ComponentsPrefixReuseHalf")) {
    const double r = ratio("BM_ComponentsFullPassesHalf", "BM_ComponentsPrefixReuseHalf");
    std::printf(
        "  the same, --score-from half             %.3f   target >= 1.7; bitwise identical: %s\n",
        r, same_results("components-full-half.hdy", "components-reuse-half.hdy").c_str());
    share_of_reach(r, true);
  }
  if (both("BM_ComponentsFullPasses", "BM_ComponentsPrefixReuse") &&
      both("BM_HeterodyneDiffDefault32", "BM_PeerBasePlusKl32")) {
    std::printf("  beside them, 32 chunks: default diff (both floors) / peer  %.3f   target <= 1.3\n",
                ratio("BM_HeterodyneDiffDefault32", "BM_PeerBasePlusKl32"));
  }
  print_pass_parts(reporter.by_name);
  print_server_ratios(reporter.by_name);
  print_generate_ratios(reporter.by_name);
  print_load_ratios(reporter.by_name);
  print_recommend_ratios(reporter.by_name);
  print_kl_kernel_ratios(reporter.median);
  print_mid_size_ratios(reporter.median);
  return 0;
}
