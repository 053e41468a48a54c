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

double in_std(int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); }

constexpr double kNormNoise = 0.05;

TensorPlan norm(const std::string& name, int64_t n, double centre = 1.0) {
  return {name, n, 0, kNormNoise, true, 0, centre};
}

// One layer's MLP: dense (gate, up, down), or a router and n_expert experts of each. The router
// is an input projection like the others: its logits have std ~1 over the experts, so the
// softmax picks different experts for different residuals without ties.
void plan_mlp(const Preset& p, const std::string& b, double e, std::vector<TensorPlan>& plan) {
  const int64_t n_embd = p.n_embd;
  if (p.n_expert == 0) {
    plan.push_back({b + "ffn_gate.weight", n_embd, p.n_ff, in_std(n_embd), false});
    plan.push_back({b + "ffn_up.weight", n_embd, p.n_ff, in_std(n_embd), false});
    plan.push_back({b + "ffn_down.weight", p.n_ff, n_embd, e * in_std(p.n_ff), false});
    return;
  }
  const int64_t n_exp = p.n_expert;
  plan.push_back({.name = b + "ffn_gate_inp.weight",
                  .ne0 = n_embd,
                  .ne1 = n_exp,
                  .sigma = in_std(n_embd),
                  .norm_weight = false,
                  .keep_f32 = true});
  plan.push_back({b + "ffn_gate_exps.weight", n_embd, p.n_ff_exp, in_std(n_embd), false, n_exp});
  plan.push_back({b + "ffn_up_exps.weight", n_embd, p.n_ff_exp, in_std(n_embd), false, n_exp});
  plan.push_back(
      {b + "ffn_down_exps.weight", p.n_ff_exp, n_embd, e * in_std(p.n_ff_exp), false, n_exp});
}

}  // namespace

// Scales, for a pre-norm network whose every block reads an RMS-normalized residual:
// - token_embd: std e = 1 (untied), or 1/sqrt(n_embd) when it doubles as the output head, so
//   that logits have std ~1 either way (gemma3 multiplies it by sqrt(n_embd) in its graph, so
//   its residual starts at std 1 with tied output);
// - input projections (q, k, v, gate, up, router): 1/sqrt(fan_in), giving unit-scale
//   activations;
// - output projections (attn_output, ffn_down): e/sqrt(fan_in), so each block adds about as
//   much to the residual as the embedding itself: token identity and context both matter
//   (with post_norms the block's output is RMS-normalized before it is added, whatever e);
// - output head: 1/sqrt(n_embd), so logits of the normalized final residual have std ~1;
// - norm weights: 1 + N(0, 0.05), a little per-channel structure without changing scale.
// The order is a converted checkpoint's; only names and shapes matter to llama.cpp.
std::vector<TensorPlan> plan_tensors(const Preset& p, int64_t n_vocab) {
  const int64_t n_embd = p.n_embd;
  const int64_t q_dim = int64_t{p.head_dim} * p.n_head;
  const int64_t kv_dim = int64_t{p.head_dim} * p.n_head_kv;
  const double e = p.tied_output ? 1.0 / std::sqrt(static_cast<double>(n_embd)) : 1.0;

  std::vector<TensorPlan> plan;
  plan.push_back({"token_embd.weight", n_embd, n_vocab, e, false});
  for (uint32_t il = 0; il < p.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    plan.push_back(norm(b + "attn_norm.weight", n_embd));
    plan.push_back({b + "attn_q.weight", n_embd, q_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_k.weight", n_embd, kv_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_v.weight", n_embd, kv_dim, in_std(n_embd), false});
    plan.push_back({b + "attn_output.weight", q_dim, n_embd, e * in_std(q_dim), false});
    if (p.qk_norm) {
      plan.push_back(norm(b + "attn_q_norm.weight", p.head_dim, p.qk_norm_gain));
      plan.push_back(norm(b + "attn_k_norm.weight", p.head_dim, p.qk_norm_gain));
    }
    if (p.post_norms) plan.push_back(norm(b + "post_attention_norm.weight", n_embd));
    plan.push_back(norm(b + "ffn_norm.weight", n_embd));
    plan_mlp(p, b, e, plan);
    if (p.post_norms) plan.push_back(norm(b + "post_ffw_norm.weight", n_embd));
  }
  plan.push_back(norm("output_norm.weight", n_embd));
  if (!p.tied_output) plan.push_back({"output.weight", n_embd, n_vocab, in_std(n_embd), false});
  return plan;
}

ValueStream::ValueStream(const TensorPlan& t, uint64_t seed)
    : norm_weight_(t.norm_weight), centre_(t.centre) {
  uint64_t s = seed;
  state_ = splitmix64(s) ^ fnv1a64(t.name);
  // The centred lane sum has variance (65536^2 - 1) / 3; scale it to the wanted std.
  scale_ = t.sigma * std::sqrt(3.0 / (65536.0 * 65536.0 - 1.0));
}

void ValueStream::next(float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double z = static_cast<double>(centred_lane_sum(splitmix64(state_)));
    // std::fma rounds once by definition, so no compiler contraction can change the bits.
    out[i] = static_cast<float>(norm_weight_ ? std::fma(z, scale_, centre_) : z * scale_);
  }
}

}  // namespace hd::engine
