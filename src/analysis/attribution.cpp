#include "analysis/attribution.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "errors.h"

namespace hd::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Effect mean_of(double sum, size_t pairs) { return {pairs > 0 ? sum / double(pairs) : kNaN, pairs}; }

}  // namespace

Attribution attribute(std::span<const double> v) {
  const size_t n = v.size();
  if (n < 1 || !std::has_single_bit(n) || n > (size_t{1} << 20)) {
    throw InputError("a sweep needs 2^k combination values, not " + std::to_string(n));
  }
  const int k = std::countr_zero(n);
  // factorial weights |S|! (k - |S| - 1)! / k!
  std::vector<double> weight(static_cast<size_t>(k), 0.0);
  for (int s = 0; s < k; ++s) {
    weight[static_cast<size_t>(s)] =
        std::exp(std::lgamma(s + 1.0) + std::lgamma(k - s + 0.0) - std::lgamma(k + 1.0));
  }
  Attribution a;
  a.main.resize(static_cast<size_t>(k));
  a.shapley.assign(static_cast<size_t>(k), 0.0);
  a.interaction.assign(static_cast<size_t>(k), std::vector<Effect>(static_cast<size_t>(k)));
  for (int i = 0; i < k; ++i) {
    const size_t bit = size_t{1} << i;
    double sum = 0, shap = 0;
    size_t pairs = 0;
    for (size_t s = 0; s < n; ++s) {
      if (s & bit) continue;
      const double d = v[s | bit] - v[s];
      shap += weight[static_cast<size_t>(std::popcount(s))] * d;  // NaN spreads: no Shapley
      if (std::isnan(d)) continue;
      sum += d;
      ++pairs;
    }
    a.main[static_cast<size_t>(i)] = mean_of(sum, pairs);
    a.shapley[static_cast<size_t>(i)] = shap;
    for (int j = i + 1; j < k; ++j) {
      const size_t bj = size_t{1} << j;
      double isum = 0;
      size_t ipairs = 0;
      for (size_t s = 0; s < n; ++s) {
        if (s & (bit | bj)) continue;
        const double d = v[s | bit | bj] - v[s | bit] - v[s | bj] + v[s];
        if (std::isnan(d)) continue;
        isum += d;
        ++ipairs;
      }
      a.interaction[static_cast<size_t>(i)][static_cast<size_t>(j)] = mean_of(isum, ipairs);
    }
  }
  return a;
}

static unsigned settings_of(unsigned player_mask, const std::vector<unsigned>& players) {
  unsigned m = 0;
  for (size_t p = 0; p < players.size(); ++p) {
    if (player_mask & (1u << p)) m |= players[p];
  }
  return m;
}

static size_t impossible_count(const std::vector<bool>& possible,
                               const std::vector<unsigned>& players) {
  size_t n = 0;
  for (unsigned pm = 0; pm < (1u << players.size()); ++pm) n += !possible[settings_of(pm, players)];
  return n;
}

std::vector<unsigned> coupled_players(const std::vector<bool>& possible) {
  const size_t n = possible.size();
  if (n < 1 || !std::has_single_bit(n) || n > (size_t{1} << 20)) {
    throw InputError("a sweep needs 2^k combinations, not " + std::to_string(n));
  }
  std::vector<unsigned> players;
  for (int i = 0; i < std::countr_zero(n); ++i) players.push_back(1u << i);
  while (impossible_count(possible, players) > 0 && players.size() > 1) {
    size_t best_a = 0, best_b = 1, best = SIZE_MAX;
    for (size_t a = 0; a < players.size(); ++a) {
      for (size_t b = a + 1; b < players.size(); ++b) {
        std::vector<unsigned> joined = players;
        joined[a] |= joined[b];
        joined.erase(joined.begin() + static_cast<std::ptrdiff_t>(b));
        if (const size_t c = impossible_count(possible, joined); c < best) {
          best = c, best_a = a, best_b = b;
        }
      }
    }
    players[best_a] |= players[best_b];
    players.erase(players.begin() + static_cast<std::ptrdiff_t>(best_b));
  }
  return players;
}

std::vector<double> player_values(std::span<const double> v, const std::vector<unsigned>& players) {
  std::vector<double> out(size_t{1} << players.size());
  for (unsigned pm = 0; pm < out.size(); ++pm) out[pm] = v[settings_of(pm, players)];
  return out;
}

}  // namespace hd::analysis
