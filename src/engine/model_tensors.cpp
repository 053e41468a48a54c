#include "engine/model_tensors.h"

#include <cmath>

#include "common/splitmix.h"

namespace hd::engine {
namespace {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

// Scales, for a pre-norm network whose every block reads an RMS-normalized residual:
// - token_embd: std e = 1 (untied), or 1/sqrt(n_embd) when it doubles as the output head, so
//   that logits have std ~1 either way;
// - input projections (q, k, v, gate, up): 1/sqrt(fan_in), giving unit-scale activations;
// - output projections (attn_output, ffn_down): e/sqrt(fan_in), so each block adds about as
//   much to the residual as the embedding itself: token identity and context both matter;
// - output head: 1/sqrt(n_embd), so logits of the normalized final residual have std ~1;
// - norm weights: 1 + N(0, 0.05), a little per-channel structure without changing scale.
std::vector<TensorPlan> plan_tensors(const Preset& p, int64_t n_vocab) {
  const int64_t n_embd = p.n_embd;
  const int64_t q_dim = int64_t{p.head_dim} * p.n_head;
  const int64_t kv_dim = int64_t{p.head_dim} * p.n_head_kv;
  const double e = p.tied_output ? 1.0 / std::sqrt(static_cast<double>(n_embd)) : 1.0;
  const auto in_std = [](int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
  constexpr double kNormNoise = 0.05;

  std::vector<TensorPlan> plan;
  plan.push_back({"token_embd.weight", n_embd, n_vocab, e, false});
  for (uint32_t il = 0; il < p.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    plan.push_back({b + "attn_norm.weight", n_embd, 0, kNormNoise, true});
    plan.push_back({b + "attn_q.weight", n_embd, q_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_k.weight", n_embd, kv_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_v.weight", n_embd, kv_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_output.weight", q_dim, n_embd, e * in_std(q_dim), false});
    if (p.qk_norm) {
      plan.push_back({b + "attn_q_norm.weight", p.head_dim, 0, kNormNoise, true});
      plan.push_back({b + "attn_k_norm.weight", p.head_dim, 0, kNormNoise, true});
    }
    plan.push_back({b + "ffn_norm.weight", n_embd, 0, kNormNoise, true});
    plan.push_back({b + "ffn_gate.weight", n_embd, p.n_ff, in_std(n_embd), false});
    plan.push_back({b + "ffn_up.weight", n_embd, p.n_ff, in_std(n_embd), false});
    plan.push_back({b + "ffn_down.weight", p.n_ff, n_embd, e * in_std(p.n_ff), false});
  }
  plan.push_back({"output_norm.weight", n_embd, 0, kNormNoise, true});
  if (!p.tied_output) plan.push_back({"output.weight", n_embd, n_vocab, in_std(n_embd), false});
  return plan;
}

ValueStream::ValueStream(const TensorPlan& t, uint64_t seed) : norm_weight_(t.norm_weight) {
  uint64_t s = seed;
  state_ = splitmix64(s) ^ fnv1a64(t.name);
  // The centred lane sum has variance (65536^2 - 1) / 3; scale it to the wanted std.
  scale_ = t.sigma * std::sqrt(3.0 / (65536.0 * 65536.0 - 1.0));
}

void ValueStream::next(float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double z = static_cast<double>(centred_lane_sum(splitmix64(state_)));
    // std::fma rounds once by definition, so no compiler contraction can change the bits.
    out[i] = static_cast<float>(norm_weight_ ? std::fma(z, scale_, 1.0) : z * scale_);
  }
}

}  // namespace hd::engine
