// The arms of a sweep (kinds/sweep/sweep.cpp): one per combination of the differing settings that can
// run, and the floor arms; computes a chunk's rows. Used by sweep, sweep --resume and verify
// alike, so that verify's bitwise comparison means something.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/kl.h"
#include "common/sha256.h"
#include "engine/arm.h"
#include "engine/model.h"
#include "errors.h"
#include "run/arms.h"
#include "run/config.h"
#include "run/provenance.h"
#include "run/scoring.h"
#include "kinds/sweep/sweep.h"
#include "store/sweep_rows.h"

namespace hd::run {

inline DiffConfig with_quantized_b(DiffConfig c) {
  resolve_quantized_b(c);
  return c;
}

// The arms of a sweep: one per combination that can run (mask 0 is A), and the floor arms (A
// and B re-split; `floor_b` false where the stored run has no floor of B: resume and verify
// recompute what it holds).
class Sweeper {
 public:
  // With b_quant, B's model is A's quantized (made or found in the cache first).
  Sweeper(const DiffConfig& given, int max_arms, bool floor_b)
      : c_(with_quantized_b(given)), names_(differing_settings(c_.a, c_.b)) {
    const DiffConfig& c = c_;
    const size_t n = size_t{1} << names_.size();
    if (names_.size() > 20 || static_cast<int>(n) > max_arms) {
      throw InputError(
          fmt::format("the arms differ in {} settings: {} combinations, more than "
                      "--max-arms {}",
                      names_.size(), n, max_arms));
    }
    auto model_a = load(c.a.model), model_b = load(c.b.model);
    check_comparable(*model_a, *model_b, Pairing::kLogits);
    arms_.resize(n);
    reasons_.resize(n);
    for (size_t m = 0; m < n; ++m) {
      const engine::ArmSettings s = combination(c.a, c.b, names_, static_cast<unsigned>(m));
      try {
        arms_[m] = std::make_unique<engine::Arm>(load(s.model), s, c.chunk);
      } catch (const InputError& e) {
        if (m == 0 || m == n - 1) throw;  // A and B themselves must run
        reasons_[m] = e.what();
      }
    }
    if (c.floor && arms_[0]->splits_batches()) {  // show says "floor: not measured" otherwise
      floor_ = std::make_unique<engine::Arm>(model_a, floor_arm(c, c.a), c.chunk);
      if (floor_b) floor_b_ = std::make_unique<engine::Arm>(model_b, floor_arm(c, c.b), c.chunk);
    }
  }

  const DiffConfig& config() const { return c_; }
  const engine::Model& model_a() const { return arms_[0]->model(); }
  const std::vector<std::string>& names() const { return names_; }

  nlohmann::json combinations() const {
    nlohmann::json out = nlohmann::json::array();
    for (size_t m = 0; m < arms_.size(); ++m) {
      const nlohmann::json s =
          to_json_naming(combination(c_.a, c_.b, names_, static_cast<unsigned>(m)), names_);
      nlohmann::json values = nlohmann::json::object();
      for (const auto& n : names_) values[n] = s[n];
      out.push_back({{"mask", m},
                     {"values", values},
                     {"possible", arms_[m] != nullptr},
                     {"reason", reasons_[m]},
                     {"model_sha256", sha256_.at(s["model"].get<std::string>())}});
    }
    return out;
  }

  int floor_ubatch() const { return floor_ ? floor_->settings().n_ubatch : 0; }
  int floor_ubatch_b() const { return floor_b_ ? floor_b_->settings().n_ubatch : 0; }

  // Provenance "arms": A and B as a diff records them, the floor arm, and every combination's
  // arm by mask (null where it cannot run): what each ran on, when a sweep crosses devices or
  // llama.cpp builds.
  nlohmann::json arms_provenance() const {
    auto facts = [&](const engine::Arm& arm) {
      return arm_facts(arm, sha256_.at(arm.settings().model));
    };
    nlohmann::json j = {{"a", facts(*arms_.front())}, {"b", facts(*arms_.back())}};
    if (floor_) j["floor"] = facts(*floor_);
    if (floor_b_) j["floor_b"] = facts(*floor_b_);
    nlohmann::json all = nlohmann::json::array();
    for (const auto& arm : arms_) all.push_back(arm ? facts(*arm) : nlohmann::json(nullptr));
    j["combinations"] = all;
    return j;
  }

  // Every scored position of one chunk: A's NLL, and per combination (and the floor) KL(A || it),
  // its NLL and how many top-1 tokens changed.
  store::SweepChunkRows compute(int chunk, const std::vector<int32_t>& tokens) {
    const int n = static_cast<int>(tokens.size());
    const int first_output = first_scored_target(c_.score_from, n) - 1;
    arms_[0]->run_chunk(tokens, nullptr, logits_a_, first_output);
    const size_t v = static_cast<size_t>(arms_[0]->model_info().n_vocab);
    store::SweepChunkRows out;
    out.chunk = chunk;
    out.first_pos = first_output;
    for (int p = first_output; p < n - 1; ++p) {
      const std::span<const float> row(logits_a_.data() + static_cast<size_t>(p - first_output) * v,
                                       v);
      out.nll_a.push_back(analysis::nll(row, tokens[p + 1]));
    }
    // KL(ref || arm) and the arm's NLL; the arm's logits are left in `into`.
    auto score = [&](const std::vector<float>& ref, engine::Arm& arm, std::vector<float>& into) {
      arm.run_chunk(tokens, nullptr, into, first_output);
      store::SweepArmRows r;
      const PassRows rows{ref, into, v, tokens, first_output};
      score_positions(rows, first_output, n - 1, scratch_, [&](int p, const analysis::PositionScore& s) {
        // A masked token (-inf logit) can make a KL or NLL +inf: a Shapley share of an infinite
        // KL means nothing, so a sweep stops there, saying where (a diff counts such positions).
        if (std::isinf(s.kl) || std::isinf(s.nll_b) || std::isinf(out.nll_a[static_cast<size_t>(p - first_output)])) {
          throw InputError(fmt::format(
              "sweep: at chunk {} position {} an arm gives a token no probability (a -inf "
              "logit), so KL or NLL is +inf and the attribution has no meaning; heterodyne diff "
              "counts such positions and leaves them out",
              chunk, p));
        }
        r.kl.push_back(s.kl);
        r.nll.push_back(s.nll_b);
        r.flips += top1_changed(s);
      });
      return r;
    };
    for (size_t m = 1; m < arms_.size(); ++m) {
      if (arms_[m])
        out.combos.emplace_back(score(logits_a_, *arms_[m], logits_b_));
      else
        out.combos.emplace_back(std::nullopt);
    }
    // The last combination is B itself (it always runs): its logits are in logits_b_, or B is A
    // when the arms differ in nothing.
    if (floor_b_) out.floor_b = score(arms_.size() > 1 ? logits_b_ : logits_a_, *floor_b_, logits_f_);
    if (floor_) out.floor = score(logits_a_, *floor_, logits_b_);
    return out;
  }

 private:
  std::shared_ptr<engine::Model> load(const std::string& path) {
    auto& m = models_[path];
    if (!m) {
      m = engine::model_load(path);
      sha256_[path] = sha256_file(path);
    }
    return m;
  }

  DiffConfig c_;
  std::vector<std::string> names_;
  std::map<std::string, std::shared_ptr<engine::Model>> models_;
  std::map<std::string, std::string> sha256_;
  std::vector<std::unique_ptr<engine::Arm>> arms_;  // [mask]; null where it cannot run
  std::vector<std::string> reasons_;
  std::unique_ptr<engine::Arm> floor_, floor_b_;
  std::vector<float> logits_a_, logits_b_, logits_f_;
  analysis::ScoreScratch scratch_;
};

}  // namespace hd::run
