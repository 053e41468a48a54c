#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace hd::analysis {

// Regularized incomplete beta I_x(a, b) by Lentz's continued fraction (Numerical Recipes 6.4).
static double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(b, a, 1 - x);
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < tiny ? tiny : d);
  double f = d;
  for (int m = 1; m < 300; ++m) {
    for (int half = 0; half < 2; ++half) {
      const double num = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                   : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + num * d;
      d = 1 / (std::fabs(d) < tiny ? tiny : d);
      c = 1 + num / c;
      if (std::fabs(c) < tiny) c = tiny;
      f *= c * d;
    }
    if (std::fabs(c * d - 1) < 1e-15) break;
  }
  return front * f / a;
}

// P(T <= t) for Student's t with df degrees of freedom, t >= 0.
static double t_cdf(double t, double df) {
  return 1 - 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double t_quantile_975(double df) {
  if (!(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  double lo = 0, hi = 1e3;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (t_cdf(mid, df) < 0.975 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MeanCI cluster_mean(std::span<const double> values, std::span<const int> cluster) {
  MeanCI r;
  r.n = values.size();
  if (r.n == 0) {
    r.mean = r.ci95 = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  double sum = 0;
  for (double v : values) sum += v;
  r.mean = sum / static_cast<double>(r.n);
  std::map<int, double> resid;
  for (size_t i = 0; i < r.n; ++i) resid[cluster[i]] += values[i] - r.mean;
  r.clusters = resid.size();
  if (r.clusters < 2) {
    r.ci95 = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  double ss = 0;
  for (const auto& [g, e] : resid) ss += e * e;
  const double g = static_cast<double>(r.clusters);
  const double var = g / (g - 1) * ss / (static_cast<double>(r.n) * static_cast<double>(r.n));
  r.ci95 = t_quantile_975(g - 1) * std::sqrt(var);
  return r;
}

MeanCI cluster_mean_of_totals(std::span<const double> sums, std::span<const double> counts) {
  MeanCI r;
  double n = 0, sum = 0;
  for (size_t g = 0; g < sums.size(); ++g) {
    if (counts[g] <= 0) continue;
    n += counts[g];
    sum += sums[g];
    ++r.clusters;
  }
  r.n = static_cast<size_t>(n);
  if (r.n == 0) {
    r.mean = r.ci95 = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  r.mean = sum / n;
  if (r.clusters < 2) {
    r.ci95 = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  double ss = 0;
  for (size_t g = 0; g < sums.size(); ++g) {
    if (counts[g] <= 0) continue;
    const double e = sums[g] - counts[g] * r.mean;
    ss += e * e;
  }
  const double g = static_cast<double>(r.clusters);
  r.ci95 = t_quantile_975(g - 1) * std::sqrt(g / (g - 1) * ss / (n * n));
  return r;
}

RateCI cluster_rate(std::span<const double> values, std::span<const int> cluster) {
  std::map<int, std::pair<double, double>> by;  // chunk → (sum, count)
  for (size_t i = 0; i < values.size(); ++i) {
    by[cluster[i]].first += values[i];
    by[cluster[i]].second += 1;
  }
  std::vector<double> sums, counts;
  for (const auto& [g, sc] : by) {
    sums.push_back(sc.first);
    counts.push_back(sc.second);
  }
  return cluster_rate_of_totals(sums, counts);
}

RateCI cluster_rate_of_totals(std::span<const double> sums, std::span<const double> counts) {
  RateCI r;
  const MeanCI m = cluster_mean_of_totals(sums, counts);
  r.n = m.n;
  r.clusters = m.clusters;
  r.lo = r.hi = std::numeric_limits<double>::quiet_NaN();
  if (r.n == 0) {
    r.rate = std::numeric_limits<double>::quiet_NaN();
    return r;  // Why::kNone
  }
  for (size_t g = 0; g < sums.size(); ++g) r.hits += counts[g] > 0 ? sums[g] : 0;
  r.rate = std::clamp(m.mean, 0.0, 1.0);
  if (r.hits == 0 || r.hits == static_cast<double>(r.n)) {  // every value 0, or every one 1
    r.why = RateCI::Why::kNoVariation;
    return r;
  }
  if (r.clusters < 2) {
    r.why = RateCI::Why::kOneChunk;
    return r;
  }
  const double n = static_cast<double>(r.n), p = r.rate;
  const double t = t_quantile_975(static_cast<double>(r.clusters) - 1);
  // Var(mean) from the t half-width; a zero variance (every chunk at the same rate) counts
  // every value as independent.
  const double var = std::pow(m.ci95 / t, 2);
  const double n_eff = var > 0 ? std::min(n, std::max(1.0, p * (1 - p) / var)) : n;
  const double t2 = t * t;
  const double denom = 1 + t2 / n_eff;
  const double center = (p + t2 / (2 * n_eff)) / denom;
  const double half = t * std::sqrt(p * (1 - p) / n_eff + t2 / (4 * n_eff * n_eff)) / denom;
  r.lo = std::clamp(center - half, 0.0, p);
  r.hi = std::clamp(center + half, p, 1.0);
  r.why = RateCI::Why::kInterval;
  return r;
}

std::vector<Percentile> kl_percentiles(std::vector<double> v) {
  std::vector<Percentile> out = {{"max", 1.0, 0},    {"99.9%", 0.999, 0}, {"99.0%", 0.99, 0},
                                 {"95.0%", 0.95, 0}, {"90.0%", 0.90, 0},  {"median", 0.5, 0},
                                 {"10.0%", 0.10, 0}, {"5.0%", 0.05, 0},   {"1.0%", 0.01, 0},
                                 {"0.1%", 0.001, 0}, {"min", 0.0, 0}};
  if (v.empty()) {
    for (auto& p : out) p.value = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  std::sort(v.begin(), v.end());
  for (auto& p : out) {
    const double pos = p.fraction * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double frac = pos - static_cast<double>(i);
    p.value = (1 - frac) * v[i] + frac * v[std::min(i + 1, v.size() - 1)];
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double hi = v[mid];
  return (*std::max_element(v.begin(), v.begin() + static_cast<long>(mid)) + hi) / 2;
}

}  // namespace hd::analysis
