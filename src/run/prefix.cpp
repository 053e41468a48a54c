#include "run/prefix.h"

#include <algorithm>
#include <cstring>

#include "engine/quantize.h"
#include "errors.h"

namespace hd::run {

bool prefix_reuse_applies(const std::string& architecture) {
  return architecture == "llama" || architecture == "qwen2" || architecture == "qwen3";
}

std::vector<int> tail_splits(int n_layer) {
  const int stride = std::max(1, n_layer / 7);
  std::vector<int> s;
  for (int l = stride; l < n_layer; l += stride) s.push_back(l);
  return s;
}

Tails::Tails(const engine::ArmSettings& settings, int chunk, const std::vector<int>& splits) {
  for (int s : splits) {
    engine::ArmSettings t = settings;
    // A model llama.cpp cannot cut or load cut (hyperparameters per layer it does not slice,
    // a graph that reads the tokens again later) runs full passes: never a wrong number.
    try {
      t.model = engine::ensure_tail_model(settings.model, s);
      arms_[s].arm = std::make_unique<engine::Arm>(engine::model_load(t.model), t, chunk);
    } catch (const InputError&) {
      arms_[s].state = -1;
    } catch (const RuntimeError&) {
      arms_[s].state = -1;
    }
  }
}

int Tails::split_for(const analysis::RestorePoint& p) const {
  using K = analysis::RestorePoint::Kind;
  if (p.kind == K::kEmbedding) return 0;
  const int limit = p.kind == K::kAfterMlp ? p.layer + 1 : p.layer;
  int best = 0;
  for (const auto& [s, e] : arms_) {
    if (s <= limit && e.state >= 0) best = s;
  }
  return best;
}

bool Tails::usable(int s, std::span<const float> own_residual, int n_tokens,
                   std::span<const float> own_logits, int first_output) {
  Entry& e = arms_.at(s);
  if (e.state == 0) {
    try {  // a residual of another width than the model's input (3-D residuals) cannot enter
      e.arm->run_residual(own_residual, n_tokens, nullptr, logits_, first_output);
      e.state = logits_.size() == own_logits.size() &&
                        std::memcmp(logits_.data(), own_logits.data(),
                                    logits_.size() * sizeof(float)) == 0
                    ? 1
                    : -1;
    } catch (const RuntimeError&) {
      e.state = -1;
    }
  }
  return e.state > 0;
}

nlohmann::json Tails::report() const {
  nlohmann::json j = {{"splits", nlohmann::json::array()},
                      {"verified", nlohmann::json::array()},
                      {"fell_back", nlohmann::json::array()}};
  for (const auto& [s, e] : arms_) {
    j["splits"].push_back(s);
    if (e.state > 0) j["verified"].push_back(s);
    if (e.state < 0) j["fell_back"].push_back(s);
  }
  return j;
}

}  // namespace hd::run
