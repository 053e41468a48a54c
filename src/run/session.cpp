#include "run/session.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/kl.h"
#include "common/sha256.h"
#include "engine/point_survey.h"
#include "engine/server_schedule.h"
#include "errors.h"
#include "run/arms.h"
#include "run/comparison.h"
#include "run/provenance.h"
#include "run/scoring.h"
#include "run/text.h"

namespace hd::run {

using analysis::ChunkResult;
using analysis::Comparison;

Session::Session(DiffConfig config) : config_(std::move(config)) {
  validate(config_);
  resolve_quantized_b(config_);
  std::map<std::string, std::shared_ptr<engine::Model>> models;  // one load per file
  auto load = [&](const std::string& path) {
    auto& m = models[path];
    if (!m) m = engine::model_load(path);
    return m;
  };
  auto model_a = load(config_.a.model);
  auto model_b = load(config_.b.model);
  check_comparable(*model_a, *model_b, Pairing::kLayers);
  // B's graph is A's (one architecture and shape): A's points, proven on A, name B's too; a
  // point B's graph lacks fails B's first decode by name.
  map_ = engine::survey_points(model_a);
  if (config_.transplants || config_.components) {
    const std::string& why = config_.components ? map_.no_components : map_.no_transplants;
    if (!why.empty()) {
      throw InputError(std::string(config_.components ? "--components" : "--transplants") +
                       ": " + why + " (heterodyne points --model " + config_.a.model + ")");
    }
    points_ = analysis::restore_points(model_a->info().n_layer, config_.components);
  }
  if (config_.save_residuals && !map_.residuals()) {
    throw InputError("--save-residuals: " + map_.no_residuals);
  }
  model_points_ = {map_.n_layer,       map_.router,        map_.route_experts,
                   map_.route_weights, map_.n_expert,      map_.n_expert_used,
                   map_.router_logits, map_.no_routing,    map_.no_routing_transplant,
                   {},                 map_.no_transplants};
  if (map_.residuals()) {
    for (int l = 0; l < map_.n_layer; ++l) model_points_.residual.push_back(residual_name(l));
  }
  for (const auto& name : config_.analyses) {
    const auto* a = analysis::find_chunk_analysis(name);
    if (const std::string why = a->unavailable(model_points_); !why.empty()) {
      throw InputError("the analysis '" + name + "' cannot run: " + why +
                       " (heterodyne points --model " + config_.a.model + ")");
    }
    analyses_.push_back(a);
  }
  a_ = make_run(model_a, config_.a);
  b_ = make_run(model_b, config_.b);
  // Each file's vocabulary once: the arms' weights hold one (55 MiB for a 128k vocabulary).
  a_.arm->share_vocabulary();
  b_.arm->share_vocabulary();
  // A server arm's passes start from tokens only: its neighbours' rows are nowhere stored.
  if (!points_.empty() && config_.prefix_reuse &&
      prefix_reuse_applies(model_a->info().architecture) && !engine::is_server_arm(config_.a) &&
      !engine::is_server_arm(config_.b)) {
    std::vector<std::string> names;
    for (const auto& p : points_) names.push_back(graph_name(p));
    reuse_a_ = std::make_unique<PrefixReuse>(*a_.arm, map_, names);
    reuse_b_ = std::make_unique<PrefixReuse>(*b_.arm, map_, names);
  }
  if (config_.floor && map_.floor()) {  // otherwise the run says why (capability_lines)
    floors_ = FloorArms(config_, model_a, model_b,
                        [this](std::shared_ptr<engine::Model> m, const engine::ArmSettings& s) {
                          return make_run(std::move(m), s);
                        },
                        *a_.arm, *b_.arm);
  }
  for (const auto& [path, m] : models) sha256_[path] = sha256_file(path);
}

std::vector<std::vector<int32_t>> Session::chunks_of(const std::string& text) const {
  return chunk_text(a_.arm->model(), text, config_.chunk, config_.max_chunks);
}

ArmRun Session::make_run(std::shared_ptr<engine::Model> model,
                                  const engine::ArmSettings& settings) const {
  ArmRun r;
  if (model) r.arm = std::make_unique<engine::Arm>(std::move(model), settings, config_.chunk);
  engine::tell_rows(map_, r.hook);
  if (map_.residuals()) {
    for (int l = 0; l < map_.n_layer; ++l) r.hook.capture(residual_name(l));
  }
  for (const auto& p : points_) r.hook.capture(graph_name(p));  // the sources of transplants
  for (const auto* a : analyses_) {  // the floor's too: an analysis may compare it with A
    for (const auto& point : a->points(model_points_)) r.hook.capture(point);
  }
  return r;
}

const std::string& Session::residual_name(int layer) const {
  return map_.name(engine::Role::kResidual, layer);
}

std::string Session::graph_name(const analysis::RestorePoint& p) const {
  using K = analysis::RestorePoint::Kind;
  const engine::Role role = p.kind == K::kEmbedding        ? engine::Role::kEmbedding
                            : p.kind == K::kAfterAttention ? engine::Role::kMid
                                                           : engine::Role::kResidual;
  return map_.name(role, p.layer);
}

// For every restore point, both directions: write one arm's tensor into the other's pass and
// score KL(A || patched) at the scored positions.
analysis::Transplants Session::transplant(std::span<const int32_t> tokens, int first_output) {
  analysis::Transplants t;
  const int n = static_cast<int>(tokens.size());
  const size_t v = static_cast<size_t>(a_.arm->model_info().n_vocab);
  const int total = 2 * static_cast<int>(points_.size());
  int done = 0;
  kl_from_a_.set(a_.logits, v);  // A's softmax once, for all of the chunk's passes
  for (size_t k = 0; k < points_.size(); ++k) {
    t.points.push_back(points_[k].label);
    const std::string name = graph_name(points_[k]);
    for (const bool denoise : {true, false}) {
      const std::span<const float> patched = patched_pass(denoise, k, tokens, first_output);
      auto& rows = denoise ? t.denoise : t.noise;
      const size_t base = rows.size();
      rows.resize(base + static_cast<size_t>(n - 1 - first_output));
      parallel_for(n - 1 - first_output, a_.arm->n_threads(), [&](int lo, int hi) {
        for (int i = lo; i < hi; ++i) {
          const int p = first_output + i;  // every position from first_output on is scored
          const auto row = static_cast<size_t>(i);
          rows[base + row] = {static_cast<int>(k) + 1, p,
                              kl_from_a_.kl_to(row, patched.subspan(row * v, v))};
        }
      });
      if (on_pass_) on_pass_(++done, total);
    }
  }
  return t;
}

// denoise: B's pass with A's tensor at the point; noise: A's pass with B's. It starts at the
// latest proven start at or before the point (the same numbers, bit for bit, without computing
// the prefix again): at the point itself the source's rows are the start's value; at an earlier
// start the target's own rows are, and the source's tensor is written at the point.
std::span<const float> Session::patched_pass(bool denoise, size_t k,
                                            std::span<const int32_t> tokens, int first_output) {
  ArmRun& target = denoise ? b_ : a_;
  const ArmRun& source = denoise ? a_ : b_;
  PrefixReuse* reuse = denoise ? reuse_b_.get() : reuse_a_.get();
  const std::string name = graph_name(points_[k]);
  const int n = static_cast<int>(tokens.size());
  const int s = reuse ? reuse->start_for(static_cast<int>(k), target.hook, target.logits, n,
                                         first_output)
                      : -1;
  if (s == static_cast<int>(k)) {
    return target.arm->run_from_view(name, source.hook.captured(name), n, nullptr, first_output);
  }
  engine::Hook patch;
  engine::tell_rows(map_, patch);
  patch.overwrite(name, source.hook.first_row(name), source.hook.captured(name));
  if (s < 0) return target.arm->run_chunk_view(tokens, &patch, first_output);
  const std::string& start = reuse->point(s);
  return target.arm->run_from_view(start, target.hook.captured(start), n, &patch, first_output);
}

nlohmann::json Session::prefix_reuse_report() const {
  if (!reuse_a_) return {{"enabled", false}};
  return {{"enabled", true}, {"a", reuse_a_->report()}, {"b", reuse_b_->report()}};
}

// Positions first_output..n-2 (each predicts the next token); residuals at every position
// the point has rows for (the last layer keeps only first_output..n-1).
analysis::Comparison Session::compare(const ArmRun& a, const ArmRun& b,
                                      std::span<const int32_t> tokens, int first_output) const {
  const auto& info = a.runner().model_info();
  const int first_target = first_scored_target(config_.score_from, static_cast<int>(tokens.size()));
  Comparison c;
  const int n = static_cast<int>(tokens.size());
  c.positions.resize(static_cast<size_t>(n - 1 - first_output));
  const size_t v = static_cast<size_t>(info.n_vocab);
  score_into(c, {a.out, b.out, v, tokens, first_output}, first_output, n - 1, first_output,
             first_target, a.runner().n_threads());
  for (int l = 0; l < info.n_layer && map_.residuals(); ++l) {
    const std::string& name = residual_name(l);
    const auto& ra = a.hook.captured(name);
    const auto& rb = b.hook.captured(name);
    const size_t w = static_cast<size_t>(a.hook.width(name));
    const int first_row = static_cast<int>(a.hook.first_row(name));
    for (int p = first_row; p < n; ++p) {
      const size_t off = static_cast<size_t>(p - first_row) * w;
      c.layers.push_back(
          {l, p, analysis::residual_diff({ra.data() + off, w}, {rb.data() + off, w})});
    }
  }
  check_rows_finite(c, a.runner().settings().model, b.runner().settings().model);
  return c;
}

ChunkResult Session::compute(int chunk, std::span<const int32_t> tokens) {
  const auto& info = a_.arm->model_info();
  // Logits only where they are scored: the output head skips the rest, as in llama-perplexity.
  const int first_output =
      first_scored_target(config_.score_from, static_cast<int>(tokens.size())) - 1;
  ChunkResult r;
  r.chunk = chunk;
  r.tokens.assign(tokens.begin(), tokens.end());
  // The run has a floor: never a chunk of its sample without it.
  const bool floor_here = floors_.present() && (!floor_on_ || floor_on_->count(chunk));
  if (floor_here) floors_.at_chunk(chunk);
  if (lean_applies(floor_here)) {
    compute_lean(r, floor_here, tokens, first_output);
    return r;
  }
  // Only the analyses read A′'s rows after A′ is compared: otherwise B′ runs in A′'s buffers.
  const bool share = analyses_.empty();
  // A floor arm may split in its arm's context, so it runs first: its arm's logits are then
  // read where llama.cpp wrote them, undisturbed until the next chunk (or a patched pass).
  if (floor_here) floors_.a().run(tokens, first_output);
  a_.run_in_place(tokens, first_output);
  if (floor_here) {
    r.floor = compare(a_, floors_.a(), tokens, first_output);
    if (share) floors_.swap_buffers();
    floors_.b().run(tokens, first_output);
  }
  b_.run_in_place(tokens, first_output);
  r.diff = compare(a_, b_, tokens, first_output);
  if (floor_here) {
    r.floor_b = compare(b_, floors_.b(), tokens, first_output);
    if (share) floors_.swap_buffers();
  }
  if (config_.save_residuals && map_.residuals()) {
    // Arm-major, layer-minor: the order the store reads them back in.
    for (const ArmRun* ar : {&a_, &b_}) {
      for (int l = 0; l < info.n_layer; ++l) {
        const std::string& name = residual_name(l);
        r.residuals.push_back({ar == &a_ ? "a" : "b", l, static_cast<int>(ar->hook.width(name)),
                               ar->hook.captured(name)});
      }
    }
  }
  // Patched passes decode in A's and B's contexts again: their logits are copied first.
  if (!analyses_.empty() || !points_.empty()) {
    a_.keep();
    b_.keep();
  }
  run_analyses(r, tokens, first_output);
  if (!points_.empty()) r.transplants = transplant(tokens, first_output);
  return r;
}

std::map<int32_t, std::string> Session::pieces_of(const ChunkResult& c) const {
  std::map<int32_t, std::string> out;
  // Ids without texts (no_vocab) store none: show prints <id>, export leaves token_text empty.
  if (!a_.arm->model().info().has_vocab) return out;
  auto add = [&](int32_t id) {
    if (id >= 0 && !out.count(id)) out[id] = a_.arm->model().token_text(id);
  };
  for (int32_t t : c.tokens) add(t);
  for (const Comparison* cmp : analysis::comparisons_of(c)) {
    for (const auto& p : cmp->positions) {
      for (int32_t id : p.score.top_a.id) add(id);
      for (int32_t id : p.score.top_b.id) add(id);
    }
  }
  return out;
}

// A floor arm's facts: those of the arm whose context it splits in, at the floor's ubatch.
static nlohmann::json floor_facts(const ArmRun& r, const std::string& sha256) {
  nlohmann::json j = arm_facts(r.runner(), sha256);
  if (r.host != nullptr) {
    j["n_ubatch"] = r.split;
    j["split_in_place"] = true;  // no context of its own: Arm::run_split
  }
  return j;
}

nlohmann::json Session::arms_provenance() const {
  nlohmann::json j;
  j["a"] = arm_facts(*a_.arm, sha256_.at(config_.a.model));
  j["b"] = arm_facts(*b_.arm, sha256_.at(config_.b.model));
  if (floors_.a().present()) j["floor"] = floor_facts(floors_.a(), sha256_.at(config_.a.model));
  if (floors_.b().present()) j["floor_b"] = floor_facts(floors_.b(), sha256_.at(config_.b.model));
  return j;
}

std::optional<std::string> Session::points_change(const nlohmann::json& provenance) const {
  if (!provenance.contains("points")) return std::nullopt;
  const nlohmann::json now = engine::to_json(map_);
  for (const auto& [key, value] : provenance["points"].items()) {
    if (!now.contains(key) || now[key] != value) {
      return "the points this heterodyne proves on '" + config_.a.model +
             "' are not the ones the run used (its '" + key +
             "' differs: another llama.cpp build?)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> Session::model_change(const nlohmann::json& stored) const {
  const auto now = arms_provenance();
  for (const char* arm : {"a", "b"}) {
    const std::string was = stored[arm]["model_sha256"];
    const std::string is = now[arm]["model_sha256"];
    if (was != is) {
      return "arm " + std::string(arm) + "'s model '" + now[arm]["model"].get<std::string>() +
             "' has sha256 " + is.substr(0, 12) + "…, the run used " + was.substr(0, 12) + "…";
    }
  }
  return std::nullopt;
}

}  // namespace hd::run
