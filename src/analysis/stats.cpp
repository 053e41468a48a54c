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

}  // namespace hd::analysis
