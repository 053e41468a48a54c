// compare_routes and its helpers (routing.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "analysis/kl.h"
#include "analysis/routing.h"

namespace hd::analysis {
namespace {

std::vector<int64_t> ids_of(std::span<const float> experts, size_t n_expert) {
  std::vector<int64_t> ids;
  for (float e : experts) {
    const auto id = static_cast<int64_t>(e);
    if (static_cast<float>(id) != e || id < 0 || static_cast<size_t>(id) >= n_expert) {
      throw std::invalid_argument("an expert id is not one of the router's experts");
    }
    ids.push_back(id);
  }
  return ids;
}

// The mixing weights over every expert, normalized to sum 1 (by their absolute values).
std::vector<double> dense_weights(const std::vector<int64_t>& ids, std::span<const float> w,
                                  size_t n_expert) {
  std::vector<double> d(n_expert, 0.0);
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) sum += std::fabs(static_cast<double>(w[i]));
  for (size_t i = 0; i < ids.size(); ++i) {
    d[static_cast<size_t>(ids[i])] += sum > 0 ? static_cast<double>(w[i]) / sum : 0.0;
  }
  return d;
}

// Softmax over every expert, in double (the KL and the margin need probabilities).
std::vector<float> softmax(std::span<const float> logits) {
  double top = -std::numeric_limits<double>::infinity(), sum = 0;
  for (float z : logits) top = std::max(top, static_cast<double>(z));
  std::vector<double> e(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) sum += e[i] = std::exp(logits[i] - top);
  std::vector<float> p(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) p[i] = static_cast<float>(e[i] / sum);
  return p;
}

double router_kl(std::span<const float> a, std::span<const float> x) {
  double sa = 0, sx = 0;
  for (size_t e = 0; e < a.size(); ++e) {
    sa += a[e];
    sx += x[e];
  }
  double kl = 0;  // a sum of terms >= 0: never below 0, +inf where q == 0 < p
  for (size_t e = 0; e < a.size(); ++e) kl += kl_term(a[e] / sa, x[e] / sx);
  return kl;
}

}  // namespace

RouteChange compare_routes(const Route& a_in, const Route& x_in, bool logits) {
  std::vector<float> pa, px;
  Route a = a_in, x = x_in;
  if (logits) {
    pa = softmax(a.probs);
    px = softmax(x.probs);
    a.probs = pa;
    x.probs = px;
  }
  const size_t n_expert = a.probs.size();
  if (x.probs.size() != n_expert || a.experts.size() != x.experts.size() ||
      a.weights.size() != a.experts.size() || x.weights.size() != x.experts.size() ||
      a.experts.empty()) {
    throw std::invalid_argument("the two routes differ in shape");
  }
  const auto ia = ids_of(a.experts, n_expert), ix = ids_of(x.experts, n_expert);
  RouteChange c;
  std::vector<char> in_a(n_expert, 0), in_x(n_expert, 0);
  for (int64_t e : ia) in_a[static_cast<size_t>(e)] = 1;
  for (int64_t e : ix) in_x[static_cast<size_t>(e)] = 1;
  size_t both = 0, either = 0;
  for (size_t e = 0; e < n_expert; ++e) {
    both += in_a[e] && in_x[e];
    either += in_a[e] || in_x[e];
  }
  c.set_changed = both != either;
  c.top1_changed = ia[0] != ix[0];
  c.jaccard = static_cast<double>(both) / static_cast<double>(either);
  c.router_kl = router_kl(a.probs, x.probs);
  const auto wa = dense_weights(ia, a.weights, n_expert), wx = dense_weights(ix, x.weights, n_expert);
  double l1 = 0;
  for (size_t e = 0; e < n_expert; ++e) l1 += std::fabs(wa[e] - wx[e]);
  c.weight_moved = l1 / 2;
  float weakest = std::numeric_limits<float>::infinity();
  float strongest_out = -std::numeric_limits<float>::infinity();
  for (size_t e = 0; e < n_expert; ++e) {
    if (in_a[e]) weakest = std::min(weakest, a.probs[e]);
    else strongest_out = std::max(strongest_out, a.probs[e]);
  }
  c.margin_a = ia.size() == n_expert ? std::nan("")
                                     : static_cast<double>(weakest) - static_cast<double>(strongest_out);
  return c;
}

std::string experts_text(std::span<const float> experts) {
  std::string s;
  for (float e : experts) {
    if (!s.empty()) s += ' ';
    s += std::to_string(static_cast<int64_t>(e));
  }
  return s;
}

std::vector<int> routed_layers(const ModelPoints& m) {
  std::vector<int> out;
  for (size_t l = 0; l < m.router.size(); ++l) {
    if (!m.router[l].empty()) out.push_back(static_cast<int>(l));
  }
  return out;
}

}  // namespace hd::analysis
