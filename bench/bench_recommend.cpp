// recommend in minutes (issue 45): the same recommendation (tiny-llama f16, base Q4_K_M, the
// five default types, two rounds, 4 calibration and 4 held-out chunks of 128 of llama.cpp's
// docs) with every variant quantized whole, one context, every pass from the tokens and every
// position scored whole (--no-reuse: recommend as it ran before) and with the reuse (variants
// spliced, passes started at the group's first point, one context per thread). The figures are the
// same bits (a test); this is time.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support.h"

namespace hd::bench {
namespace {

// The long text in halves: calibration first, held out after it.
std::vector<std::string> halves(const Setup& s) {
  std::ifstream in(s.long_text, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const std::vector<std::string> paths = {s.dir + "/calibration.txt", s.dir + "/held-out.txt"};
  std::ofstream(paths[0], std::ios::binary) << text.substr(0, text.size() / 2);
  std::ofstream(paths[1], std::ios::binary) << text.substr(text.size() / 2);
  return paths;
}

// range(0): 1 with the reuse, 0 with --no-reuse.
void BM_Recommend(benchmark::State& state) {
  const Setup& s = setup();
  const auto texts = halves(s);
  std::vector<std::string> args = {s.bin,
                                   "recommend",
                                   "--a",
                                   s.small,
                                   "-f",
                                   texts[0],
                                   "--held-out-text",
                                   texts[1],
                                   "--chunk",
                                   "128",
                                   "--calibration-chunks",
                                   "4",
                                   "--held-out-chunks",
                                   "4",
                                   "--target-size",
                                   "Q4_K_M",
                                   "-o",
                                   s.dir + "/recommend",
                                   "--force"};
  if (state.range(0) == 0) args.push_back("--no-reuse");
  for (auto _ : state) bench::run(args);
}

BENCHMARK(BM_Recommend)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1)->Repetitions(3);

}  // namespace

void print_recommend_ratios(const std::map<std::string, double>& by_name) {
  const auto at = [&](int reuse) {
    const auto it =
        by_name.find("BM_Recommend/" + std::to_string(reuse) + "/iterations:1/repeats:3_median");
    return it == by_name.end() ? -1.0 : it->second;
  };
  if (at(0) < 0 || at(1) < 0) return;  // a filtered run: no ratio
  std::printf(
      "  recommend (tiny-llama f16, Q4_K_M's size, 2 rounds, 4 + 4 chunks of 128; medians "
      "of 3): --no-reuse %.1f s, reuse %.1f s: %.2fx faster (target >= 2)\n",
      at(0), at(1), at(0) / at(1));
}

}  // namespace hd::bench
