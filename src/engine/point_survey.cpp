#include "engine/point_survey.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "engine/local_arm.h"
#include "engine/point_cache.h"
#include "engine/route_survey.h"
#include "errors.h"

namespace hd::engine {
namespace {

// Two sequences that differ at every position but the first (BOS where the model has one).
std::vector<int32_t> sequence(const ModelInfo& info, int n, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  const int32_t v = info.n_vocab;
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = (i * (37 + 16 * salt) + 11 + 7 * salt) % v;
  if (info.bos >= 0) t[0] = info.bos;
  else t[0] = 0;
  return t;
}

class Survey {
 public:
  explicit Survey(const std::shared_ptr<Model>& model)
      : info_(model->info()),
        n_(std::min(8, info_.n_ctx_train)),
        first_output_(n_ / 2),
        arm_(model, settings(info_), n_),
        t1_(sequence(info_, n_, 0)),
        t2_(sequence(info_, n_, 1)) {}

  PointMap run();
  void capture_candidates();
  std::vector<Hook::Node> listed;  // every node, in the order the graph asked about them

 private:
  static ArmSettings settings(const ModelInfo& info) {
    ArmSettings s;
    s.model = info.path;
    return s;
  }
  void decode(const std::vector<int32_t>& tokens, Hook* hook, std::vector<float>& logits) {
    arm_.decode({tokens, {}, n_, first_output_, 0, {}}, hook, logits);
  }
  // Why `name` cannot be a point ("" when it can): absent, unreadable, or rows other than
  // the hook will expect.
  std::string unusable(const std::string& name) const;
  // Whether a usable point keeps other rows than point_has_output_rows_only predicts.
  bool excepted(const std::string& name) const;
  bool swaps(const std::string& name);  // the swap test (point_survey.h)
  // The first candidate of `role` at `layer` that passes, or "" with `why` set.
  std::string prove(Role role, int layer, std::string& why);

  const ModelInfo& info_;
  const int n_, first_output_;
  LocalArm arm_;
  const std::vector<int32_t> t1_, t2_;
  std::map<std::string, Hook::Node> nodes_;
  Hook first_;  // t1's pass, capturing every usable candidate
  std::vector<float> logits1_, logits_;
};

std::string Survey::unusable(const std::string& name) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return "not in the graph";
  const Hook::Node& node = it->second;
  if (!node.readable) return "not a contiguous f32 tensor of at most 3 dimensions";
  if (node.count > 1) return fmt::format("names {} tensors", node.count);
  if (node.rows != n_ && node.rows != n_ - first_output_) {
    return fmt::format("has {} rows in a batch of {} with {} outputs", node.rows, n_,
                       n_ - first_output_);
  }
  return "";
}

bool Survey::excepted(const std::string& name) const {
  const bool output_only = nodes_.at(name).rows != n_;
  return output_only != point_has_output_rows_only(name, info_.n_layer);
}

bool Survey::swaps(const std::string& name) {
  Hook patch;
  patch.overwrite(name, first_.first_row(name), first_.captured(name));
  if (excepted(name)) patch.except_from_row_rule(name);
  decode(t2_, &patch, logits_);
  return logits_ == logits1_;
}

std::string Survey::prove(Role role, int layer, std::string& why) {
  why.clear();
  for (const std::string& base : candidate_names(role)) {
    const std::string name = per_layer(role) ? fmt::format("{}-{}", base, layer) : base;
    const std::string bad = unusable(name);
    if (bad == "not in the graph") continue;
    if (!bad.empty()) {
      why += fmt::format("{}{} {}", why.empty() ? "" : "; ", name, bad);
      continue;
    }
    if (role == Role::kPerHead) {
      const int64_t heads = int64_t{info_.n_head} * info_.head_dim_v;
      if (nodes_.at(name).width == heads) return name;
      why += fmt::format("{}{} is {} wide, not {} heads × {}", why.empty() ? "" : "; ", name,
                         nodes_.at(name).width, info_.n_head, info_.head_dim_v);
      continue;
    }
    if (role == Role::kAttnOut || role == Role::kMlpOut) return name;  // named, never written
    if (swaps(name)) return name;
    why += fmt::format("{}{} fails the swap test (it does not carry the whole state)",
                       why.empty() ? "" : "; ", name);
  }
  if (why.empty()) {
    std::string names;
    for (const std::string& base : candidate_names(role)) {
      names += fmt::format("{}{}{}", names.empty() ? "" : ", ", base,
                           per_layer(role) ? fmt::format("-{}", layer) : "");
    }
    why = "the graph names none of " + names;
  }
  return "";
}

// "l_out on layers 0-3", "ffn_inp on layers 0, 2; none on layer 1 (why)".
std::string layers_line(const std::vector<std::string>& names, const std::vector<std::string>& why) {
  std::map<std::string, std::vector<int>> by_base;
  for (size_t l = 0; l < names.size(); ++l) {
    const std::string& n = names[l];
    by_base[n.empty() ? "" : n.substr(0, n.rfind('-'))].push_back(static_cast<int>(l));
  }
  std::string out;
  for (const auto& [base, layers] : by_base) {
    std::string list;
    const bool run = layers.back() - layers.front() + 1 == static_cast<int>(layers.size());
    if (run && layers.size() > 2) {
      list = fmt::format("{}-{}", layers.front(), layers.back());
    } else {
      for (int l : layers) list += fmt::format("{}{}", list.empty() ? "" : ", ", l);
    }
    const char* noun = layers.size() == 1 ? "layer" : "layers";
    if (!out.empty()) out += "; ";
    out += base.empty() ? fmt::format("none on {} {} ({})", noun, list,
                                      why[static_cast<size_t>(layers.front())])
                        : fmt::format("{} on {} {}", base, noun, list);
  }
  return out;
}

// The first layer without a `role` point, as a reason ("" when every layer has one).
std::string first_missing(const PointMap& m, const std::vector<std::string>& names,
                          const std::vector<std::string>& why, const char* what) {
  for (size_t l = 0; l < names.size(); ++l) {
    if (names[l].empty()) {
      return fmt::format("{} has no {} point at layer {}: {}", m.architecture, what, l, why[l]);
    }
  }
  return "";
}

// What the proven points allow, and why not where they do not.
void finish(PointMap& m, std::map<Role, std::vector<std::string>>& why) {
  m.no_residuals = first_missing(m, m.residual, why[Role::kResidual], "residual");
  m.no_transplants = !m.no_residuals.empty() ? m.no_residuals
                     : m.embedding.empty()
                         ? m.architecture + " has no proven embedding point (layer 0's input)"
                         : "";
  m.no_components = !m.no_transplants.empty()
                        ? m.no_transplants
                        : first_missing(m, m.mid, why[Role::kMid],
                                        "mid-layer (between attention and MLP)");
  const bool any_head = std::any_of(m.per_head.begin(), m.per_head.end(),
                                    [](const std::string& n) { return !n.empty(); });
  // Every model has a layer (model_load refuses one without): layer 0's reason stands for all.
  m.no_per_head = any_head ? ""
                           : fmt::format("{} has no per-head attention tap: {}", m.architecture,
                                         why[Role::kPerHead][0]);
}

}  // namespace

// Pass 1 keeps every usable candidate of the roles the swap test proves.
void Survey::capture_candidates() {
  for (Role role : {Role::kEmbedding, Role::kResidual, Role::kMid}) {
    for (int l = per_layer(role) ? 0 : -1; l < (per_layer(role) ? info_.n_layer : 0); ++l) {
      for (const std::string& base : candidate_names(role)) {
        const std::string name = per_layer(role) ? fmt::format("{}-{}", base, l) : base;
        if (!unusable(name).empty()) continue;
        first_.capture(name);
        if (excepted(name)) first_.except_from_row_rule(name);
      }
    }
  }
  decode(t1_, &first_, logits1_);
}

PointMap Survey::run() {
  PointMap m;
  m.architecture = info_.architecture;
  m.n_layer = info_.n_layer;
  if (!arm_.splits_batches()) {
    m.no_floor = info_.architecture +
                 " keeps no KV cache: llama.cpp evaluates a batch in one piece, so there is no "
                 "other split to measure a floor with";
  }
  Hook lister;
  lister.list_nodes(&listed);
  decode(t1_, &lister, logits1_);
  for (const auto& node : listed) nodes_[node.name] = node;
  capture_candidates();
  decode(t2_, nullptr, logits_);
  const std::string vacuous =
      logits_ == logits1_ ? "its logits do not depend on the tokens: no point can be proven" : "";
  std::string why_embedding;
  if (vacuous.empty()) m.embedding = prove(Role::kEmbedding, -1, why_embedding);
  struct PerLayer {
    Role role;
    std::vector<std::string>* names;
    const char* what;
  };
  std::map<Role, std::vector<std::string>> why;
  for (auto [role, names, what] : {PerLayer{Role::kResidual, &m.residual, "residual"},
                                   {Role::kMid, &m.mid, "mid"},
                                   {Role::kPerHead, &m.per_head, "per-head"},
                                   {Role::kAttnOut, &m.attn_out, "attn_out"},
                                   {Role::kMlpOut, &m.mlp_out, "mlp_out"}}) {
    auto& w = why[role];
    w.assign(static_cast<size_t>(info_.n_layer), vacuous);
    names->assign(static_cast<size_t>(info_.n_layer), "");
    for (int l = 0; l < info_.n_layer && (vacuous.empty() || role == Role::kPerHead); ++l) {
      (*names)[static_cast<size_t>(l)] = prove(role, l, w[static_cast<size_t>(l)]);
    }
    m.proofs.push_back(fmt::format("{}: {}", what, layers_line(*names, w)));
  }
  m.proofs.insert(m.proofs.begin(),
                  m.embedding.empty() ? fmt::format("embedding: none ({}{})", why_embedding, vacuous)
                                      : fmt::format("embedding: {}", m.embedding));
  if (nodes_.count("result_norm")) m.result_norm = "result_norm";
  RouteSurvey routes;
  routes.nodes = &nodes_;
  routes.unusable = [this](const std::string& name) { return unusable(name); };
  routes.excepted = [this](const std::string& name) { return excepted(name); };
  routes.decode = [this](Hook* hook, std::vector<float>& logits) { decode(t1_, hook, logits); };
  routes.logits = logits1_;
  survey_routes(routes, m);
  finish(m, why);
  for (const auto* names :
       {&m.residual, &m.mid, &m.per_head, &m.attn_out, &m.mlp_out, &m.router, &m.route_experts,
        &m.route_weights}) {
    for (const std::string& name : *names) {
      if (!name.empty() && excepted(name)) m.row_rule_exceptions.push_back(name);
    }
  }
  if (!m.embedding.empty() && excepted(m.embedding)) m.row_rule_exceptions.push_back(m.embedding);
  for (const std::string& r : m.residual) {
    if (r.empty()) continue;
    const int64_t w = nodes_.at(r).width;
    if (m.residual_width == 0) m.residual_width = w;
    if (w != m.residual_width) {
      m.no_residuals = m.no_transplants = m.no_components =
          fmt::format("{}'s residual points differ in width ({} is {} wide, not {})",
                      m.architecture, r, w, m.residual_width);
    }
  }
  return m;
}

PointMap survey_points(const std::shared_ptr<Model>& model, std::vector<Hook::Node>* nodes) {
  const std::filesystem::path slot = survey_slot(model->info().path);
  if (nodes == nullptr) {
    if (auto kept = kept_survey(slot)) return *kept;
  }
  Survey survey(model);
  PointMap m = survey.run();
  if (nodes != nullptr) *nodes = std::move(survey.listed);
  keep_survey(slot, m);
  return m;
}

}  // namespace hd::engine
