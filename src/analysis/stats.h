// Means with honest intervals, and the percentile list llama-perplexity prints.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace hd::analysis {

struct MeanCI {
  double mean = 0;
  double ci95 = 0;      // half-width of the 95 % interval; NaN with fewer than 2 clusters
  size_t n = 0;         // values
  size_t clusters = 0;  // chunks
};

// Two-sided 97.5 % quantile of Student's t with `df` degrees of freedom.
double t_quantile_975(double df);

// Mean of `values` with a 95 % t-interval from the cluster-robust (CR1) standard error,
// clusters given per value (tokens inside a chunk are correlated, chunks are not):
//   mean = sum x / N,  e_g = sum_{i in g} (x_i - mean),
//   Var(mean) = G / (G - 1) * sum_g e_g^2 / N^2,   ci95 = t_{0.975, G-1} * sqrt(Var).
MeanCI cluster_mean(std::span<const double> values, std::span<const int> cluster);

// The same mean and interval from per-cluster totals: sums[g] = sum of the values of cluster
// g, counts[g] = how many (clusters with none are not clusters): e_g = sums[g] - counts[g] * mean.
MeanCI cluster_mean_of_totals(std::span<const double> sums, std::span<const double> counts);

// A rate: the mean of values in [0, 1] (0/1 events, or per-position fractions), with a 95 %
// interval that stays inside [0, 1]. A symmetric t-interval on a rate near 0 or 1 crosses the
// bound ("3e-16 ± 1.1"); this is the Wilson score interval at the effective sample size the
// cluster-robust variance gives, n_eff = p (1 - p) / Var_CR1(mean), at most the number of
// values, with Student's t for G - 1 chunks in place of the normal quantile. Where there is
// no interval, `lo` and `hi` are NaN and `why` says why: all values 0 (or all 1), or fewer
// than 2 chunks.
struct RateCI {
  double rate = 0;
  double lo = 0, hi = 0;
  double hits = 0;      // the sum of the values: the count, for 0/1 events
  size_t n = 0;         // values
  size_t clusters = 0;  // chunks
  enum class Why { kInterval, kNoVariation, kOneChunk, kNone } why = Why::kNone;
  bool has_interval() const { return why == Why::kInterval; }
};
RateCI cluster_rate(std::span<const double> values, std::span<const int> cluster);
// The same from per-chunk totals, as cluster_mean_of_totals takes them.
RateCI cluster_rate_of_totals(std::span<const double> sums, std::span<const double> counts);

struct Percentile {
  const char* label;  // "max", "99.9%", ..., "min"
  double fraction;
  double value;
};

// The middle value, or the mean of the middle two for an even count; 0 for none.
double median(std::vector<double> values);

// llama-perplexity's KLD list: max, 99.9, 99, 95, 90, median, 10, 5, 1, 0.1 %, min, with its
// linear interpolation between order statistics (p = f * (n - 1)).
std::vector<Percentile> kl_percentiles(std::vector<double> values);

}  // namespace hd::analysis
