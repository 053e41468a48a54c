#include "run/prefix.h"

#include <cstring>

#include "errors.h"

namespace hd::run {

bool prefix_reuse_applies(const std::string& architecture) {
  return architecture == "llama" || architecture == "qwen2" || architecture == "qwen3";
}

PrefixReuse::PrefixReuse(engine::Arm& arm, const engine::PointMap& map,
                         std::vector<std::string> points)
    : arm_(arm), map_(map), points_(std::move(points)) {
  state_.assign(points_.size(), 0);
  why_.assign(points_.size(), "");
  if (!state_.empty()) {
    state_[0] = -1;  // the embedding: a pass patched there is a full pass
    why_[0] = "the embedding";
  }
}

// The last layer's points: not a start (the pass starts before them), and no failure.
static const char* const kOutputRowsOnly = "it keeps only the output rows";

static bool same_bits(std::span<const float> x, std::span<const float> y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

std::string PrefixReuse::prove(int k, const engine::Hook& own, std::span<const float> own_logits,
                               int n_tokens, int first_output) {
  const std::string& name = points_[static_cast<size_t>(k)];
  const auto& rows = own.captured(name);
  const size_t width = static_cast<size_t>(arm_.model_info().n_embd);
  if (own.first_row(name) != 0 || rows.size() != static_cast<size_t>(n_tokens) * width) {
    return kOutputRowsOnly;
  }
  // The last point has no next one to stop at: its check is the logits too.
  const bool whole = !whole_proven_ || static_cast<size_t>(k) + 1 == points_.size();
  engine::Hook check;
  std::string next;
  if (!whole) {
    next = points_[static_cast<size_t>(k) + 1];
    engine::tell_rows(map_, check);
    check.stop_after(next);
  }
  std::span<const float> logits;  // where the arm holds them: own_logits is a copy
  try {
    logits = arm_.run_from_view(name, rows, n_tokens, whole ? nullptr : &check, first_output);
  } catch (const RuntimeError& e) {
    return e.what();
  }
  if (whole) {
    if (!same_bits(logits, own_logits)) return "the pass from it gives other logits";
    whole_proven_ = true;
    return "";
  }
  if (check.first_row(next) != own.first_row(next) ||
      !same_bits(check.captured(next), own.captured(next))) {
    return "the pass from it gives another " + next;
  }
  return "";
}

int PrefixReuse::start_for(int k, const engine::Hook& own, std::span<const float> own_logits,
                           int n_tokens, int first_output) {
  for (int s = k; s >= 0; --s) {
    auto& state = state_[static_cast<size_t>(s)];
    if (state == 0) {
      why_[static_cast<size_t>(s)] = prove(s, own, own_logits, n_tokens, first_output);
      state = why_[static_cast<size_t>(s)].empty() ? 1 : -1;
    }
    if (state > 0) return s;
  }
  return -1;
}

nlohmann::json PrefixReuse::report() const {
  nlohmann::json j = {{"verified", nlohmann::json::array()},
                      {"fell_back", nlohmann::json::array()}};
  for (size_t k = 1; k < points_.size(); ++k) {
    if (state_[k] > 0) j["verified"].push_back(points_[k]);
    if (state_[k] < 0 && why_[k] != kOutputRowsOnly) j["fell_back"].push_back({{"point", points_[k]}, {"why", why_[k]}});
  }
  return j;
}

}  // namespace hd::run
