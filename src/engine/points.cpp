#include "engine/points.h"

#include <algorithm>

#include "engine/hook.h"
#include "errors.h"

namespace hd::engine {

const std::vector<std::string>& candidate_names(Role role) {
  // Measured on llama.cpp's fixtures of every architecture (docs/architectures.md):
  // - build_inp_embd names the token path's result "embd"; a few models rename it. The tensor
  //   named "inp_embd" is the leaf for llama_batch.embd, which a batch of tokens never computes.
  // - l_last-N: deepseek4 and qwen4exp (hyper-connections, a 3-D residual of 4 streams);
  //   ffn_residual-N: plamo2; nemotron_h_block_out-N: nemotron_h, whose l_out-N is not the
  //   layer's output.
  // - attn_residual-N: plamo2, qwen35, qwen3next; sa_out-N: gemma, gemma2, bailingmoe2.
  // - attn_pregate-N: the per-head tap of gated attention (qwen35, qwen3next), renamed from
  //   kqv_out-N (the last name given wins).
  // inpL first: gpt2, starcoder and mpt add a learned position embedding to embd and name the
  // sum inpL. embd alone passes the swap test there (both passes have the same positions), yet
  // it is not layer 0's whole input once the arms' position embeddings differ.
  static const std::vector<std::string> embedding = {"inpL", "embd", "model.embed_tokens",
                                                     "model.input_embed", "embedding_output",
                                                     "inp_scaled"};
  static const std::vector<std::string> residual = {"l_out", "l_last", "ffn_residual",
                                                    "nemotron_h_block_out"};
  static const std::vector<std::string> mid = {"ffn_inp", "attn_residual", "sa_out"};
  static const std::vector<std::string> per_head = {"kqv_out", "attn_pregate"};
  static const std::vector<std::string> attn_out = {"attn_out"};
  static const std::vector<std::string> mlp_out = {"ffn_out"};
  switch (role) {
    case Role::kEmbedding:
      return embedding;
    case Role::kResidual:
      return residual;
    case Role::kMid:
      return mid;
    case Role::kPerHead:
      return per_head;
    case Role::kAttnOut:
      return attn_out;
    case Role::kMlpOut:
      return mlp_out;
  }
  return embedding;
}

bool per_layer(Role role) { return role != Role::kEmbedding; }

bool point_has_output_rows_only(const std::string& name, int n_layer) {
  if (name == "result_norm" || name == "result_output") return true;
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || name.substr(dash + 1) != std::to_string(n_layer - 1))
    return false;
  const std::string base = name.substr(0, dash);
  if (base == "ffn_norm" || base == "ffn_out") return true;
  for (Role r : {Role::kResidual, Role::kMid}) {
    const auto& c = candidate_names(r);
    if (std::find(c.begin(), c.end(), base) != c.end()) return true;
  }
  return false;
}

const std::string& PointMap::name(Role role, int layer) const {
  static const std::string none;
  if (role == Role::kEmbedding) return embedding;
  const std::vector<std::string>* v = role == Role::kResidual  ? &residual
                                      : role == Role::kMid     ? &mid
                                      : role == Role::kPerHead ? &per_head
                                      : role == Role::kAttnOut ? &attn_out
                                                               : &mlp_out;
  if (layer < 0 || layer >= static_cast<int>(v->size())) return none;
  return (*v)[static_cast<size_t>(layer)];
}

void tell_rows(const PointMap& m, Hook& hook) {
  for (const std::string& name : m.row_rule_exceptions) hook.except_from_row_rule(name);
  // [1, n_used, rows] mixing weights look [1, n_used] in a ubatch of one row.
  for (const std::string& name : m.route_weights) {
    if (!name.empty()) hook.expect_width(name, m.n_expert_used);
  }
}

nlohmann::json to_json(const PointMap& m) {
  return {{"architecture", m.architecture},
          {"n_layer", m.n_layer},
          {"embedding", m.embedding},
          {"residual", m.residual},
          {"mid", m.mid},
          {"per_head", m.per_head},
          {"attn_out", m.attn_out},
          {"mlp_out", m.mlp_out},
          {"router", m.router},
          {"route_experts", m.route_experts},
          {"route_weights", m.route_weights},
          {"n_expert", m.n_expert},
          {"n_expert_used", m.n_expert_used},
          {"router_logits", m.router_logits},
          {"result_norm", m.result_norm},
          {"residual_width", m.residual_width},
          {"row_rule_exceptions", m.row_rule_exceptions},
          {"no_residuals", m.no_residuals},
          {"no_transplants", m.no_transplants},
          {"no_components", m.no_components},
          {"no_per_head", m.no_per_head},
          {"no_floor", m.no_floor},
          {"no_routing", m.no_routing},
          {"no_routing_transplant", m.no_routing_transplant},
          {"proofs", m.proofs}};
}

PointMap point_map_from_json(const nlohmann::json& j) {
  try {
    PointMap m;
    m.architecture = j.at("architecture").get<std::string>();
    m.n_layer = j.at("n_layer").get<int>();
    m.embedding = j.at("embedding").get<std::string>();
    for (auto [key, v] : {std::pair{"residual", &m.residual}, {"mid", &m.mid},
                          {"per_head", &m.per_head}, {"attn_out", &m.attn_out},
                          {"mlp_out", &m.mlp_out}, {"router", &m.router},
                          {"route_experts", &m.route_experts},
                          {"route_weights", &m.route_weights}}) {
      // Maps stored before routing was read have no route_* lists: no layer routed there.
      *v = j.contains(key) ? j.at(key).get<std::vector<std::string>>()
                           : std::vector<std::string>(static_cast<size_t>(m.n_layer));
      if (v->size() != static_cast<size_t>(m.n_layer)) {
        throw RuntimeError(std::string("a stored point map is damaged: its ") + key +
                           " list does not have one entry per layer");
      }
    }
    m.result_norm = j.at("result_norm").get<std::string>();
    m.residual_width = j.at("residual_width").get<int64_t>();
    m.row_rule_exceptions = j.at("row_rule_exceptions").get<std::vector<std::string>>();
    m.no_residuals = j.at("no_residuals").get<std::string>();
    m.no_transplants = j.at("no_transplants").get<std::string>();
    m.no_components = j.at("no_components").get<std::string>();
    m.no_per_head = j.at("no_per_head").get<std::string>();
    m.no_floor = j.at("no_floor").get<std::string>();
    m.n_expert = j.value("n_expert", int64_t{0});
    m.n_expert_used = j.value("n_expert_used", int64_t{0});
    m.router_logits = j.value("router_logits", false);
    const std::string older = "the run was made before heterodyne read routing";
    m.no_routing = j.value("no_routing", older);
    m.no_routing_transplant = j.value("no_routing_transplant", older);
    m.proofs = j.at("proofs").get<std::vector<std::string>>();
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeError(std::string("a stored point map is damaged: ") + e.what());
  }
}

std::vector<std::string> capability_lines(const PointMap& m) {
  auto line = [](const char* what, const std::string& why) {
    return std::string(what) + ": " + (why.empty() ? "yes" : "no (" + why + ")");
  };
  return {"logits (KL, flips, perplexity, gate): yes", line("floor", m.no_floor),
          line("residuals", m.no_residuals), line("transplants", m.no_transplants),
          line("components", m.no_components), line("per-head", m.no_per_head),
          line("routing", m.no_routing), line("routing transplant", m.no_routing_transplant)};
}

}  // namespace hd::engine
