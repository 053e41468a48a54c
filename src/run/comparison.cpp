#include "run/comparison.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "errors.h"

namespace hd::run {

void parallel_for(int n, int threads, const std::function<void(int, int)>& fn) {
  threads = std::max(1, std::min(threads, n));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&, t] { fn(n * t / threads, n * (t + 1) / threads); });
  }
  fn(0, n / threads);
  for (auto& th : pool) th.join();
}

void score_into(analysis::Comparison& c, const PassRows& rows, int from, int to, int first_output,
                int first_target, int threads) {
  parallel_for(to - from, threads, [&](int lo, int hi) {
    analysis::ScoreScratch scratch;
    score_positions(rows, from + lo, from + hi, scratch,
                    [&](int p, const analysis::PositionScore& s) {
                      auto& row = c.positions[static_cast<size_t>(p - first_output)];
                      row.pos = p;
                      row.target = rows.tokens[static_cast<size_t>(p + 1)];
                      row.scored = p + 1 >= first_target;
                      row.score = s;
                    });
  });
}

void check_rows_finite(const analysis::Comparison& c, const std::string& model_a,
                       const std::string& model_b) {
  for (const auto& row : c.layers) {
    const auto& d = row.diff;
    if (std::isfinite(d.rel_err) && std::isfinite(d.cosine) && std::isfinite(d.max_abs)) continue;
    throw RuntimeError("the residuals after layer " + std::to_string(row.layer) + " at position " +
                       std::to_string(row.pos) + " give a non-finite relative error (" +
                       std::to_string(d.rel_err) +
                       "): arm A's residual there is zero, or an arm's holds NaN or inf; the "
                       "weights of '" +
                       model_a + "' or '" + model_b + "' may be corrupt");
  }
}

}  // namespace hd::run
