#include "run/length_curve.h"

#include <algorithm>
#include <cmath>

#include "analysis/kl.h"
#include "analysis/tap_diff.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"
#include "run/arms.h"
#include "run/config.h"
#include "run/input.h"
#include "run/session.h"

namespace hd::run {
namespace {

struct ArmPass {
  std::vector<float> residual;  // [L][n_embd], the last layer's output
  std::vector<float> logits;    // [L][n_vocab]
};

// `last`: the last layer's residual point, "" where the model has none proven.
ArmPass run_arm(const std::shared_ptr<engine::Model>& model, const engine::ArmSettings& s,
                std::span<const int32_t> tokens, const std::string& last) {
  engine::Arm arm(model, s, static_cast<int>(tokens.size()));
  engine::Hook hook;
  if (!last.empty()) hook.capture(last);
  ArmPass p;
  arm.run_chunk(tokens, &hook, p.logits, 0);
  if (!last.empty()) p.residual = hook.captured(last);
  return p;
}

}  // namespace

nlohmann::json length_curve(const LengthCurveConfig& c,
                            const std::function<void(const std::string&)>& progress) {
  if (c.lengths.empty()) throw InputError("--lengths needs at least one length");
  for (size_t i = 0; i < c.lengths.size(); ++i) {
    if (c.lengths[i] < 1 || (i > 0 && c.lengths[i] <= c.lengths[i - 1])) {
      throw InputError("--lengths must be positive and strictly increasing");
    }
  }
  const Input input = read_input({c.text_file, c.token_ids}, c.skip_unencodable);  // diff's checks

  auto model_a = engine::model_load(c.a.model);
  auto model_b = c.b.model == c.a.model ? model_a : engine::model_load(c.b.model);
  // The curve compares logits and the last layer's residual: one vocabulary, one width.
  check_comparable(*model_a, *model_b, Pairing::kLogits);
  if (model_a->info().n_embd != model_b->info().n_embd) {
    throw InputError("the arms' models differ in width: their residuals cannot be compared");
  }
  const int longest = c.lengths.back();
  const std::vector<int32_t> tokens =
      input_tokens(*model_a, input, c.skip_unencodable, static_cast<size_t>(longest), progress);
  if (tokens.size() < static_cast<size_t>(longest)) {
    throw InputError(input.name() + " gives " + std::to_string(tokens.size()) +
                     " tokens, fewer than " + std::to_string(longest));
  }
  const engine::PointMap points = engine::survey_points(model_a);
  const std::string last = points.name(engine::Role::kResidual, model_a->info().n_layer - 1);
  if (last.empty()) progress("residuals: no (" + points.no_residuals + ")");
  const size_t n_vocab = static_cast<size_t>(model_a->info().n_vocab);
  nlohmann::json rows = nlohmann::json::array();
  analysis::ScoreScratch scratch;
  for (int len : c.lengths) {
    progress("length " + std::to_string(len));
    const std::span<const int32_t> prompt(tokens.data(), static_cast<size_t>(len));
    const ArmPass a = run_arm(model_a, c.a, prompt, last);
    const ArmPass b = run_arm(model_b, c.b, prompt, last);
    double sq_delta = 0, sq_ref = 0;
    for (size_t k = 0; k < a.residual.size(); ++k) {
      const double d = static_cast<double>(b.residual[k]) - a.residual[k];
      sq_delta += d * d;
      sq_ref += static_cast<double>(a.residual[k]) * a.residual[k];
    }
    double kl_sum = 0, kl_max = 0;
    int flips = 0;
    for (size_t p = 0; p < static_cast<size_t>(len); ++p) {
      const std::span<const float> la(a.logits.data() + p * n_vocab, n_vocab);
      const std::span<const float> lb(b.logits.data() + p * n_vocab, n_vocab);
      const double kl = analysis::kl_divergence(la, lb, scratch);
      kl_sum += kl;
      kl_max = std::max(kl_max, kl);
      // The lowest id among ties, as llama-perplexity counts top-1 agreement.
      flips += std::max_element(la.begin(), la.end()) - la.begin() !=
               std::max_element(lb.begin(), lb.end()) - lb.begin();
    }
    nlohmann::json row = {{"length", len},
                          {"rel_err", sq_ref > 0 ? std::sqrt(sq_delta / sq_ref) : 0.0},
                          {"max_abs", analysis::tap_delta(a.residual, b.residual).max_abs},
                          {"mean_kl", kl_sum / len},
                          {"max_kl", kl_max},
                          {"top1_flips", flips}};
    if (last.empty()) row["rel_err"] = row["max_abs"] = nullptr;  // not measured, not zero
    rows.push_back(std::move(row));
  }
  return {{"a", to_json(c.a)}, {"b", to_json(c.b)}, {"tokens", longest}, {"rows", rows}};
}

}  // namespace hd::run
