// A model's points: which tensors of its compute graph heterodyne reads and writes, found in
// the graph itself (point_survey.h) rather than listed per architecture.
//
// The graph names tensors "<name>-<layer>" (llama-context.cpp, graph_get_cb), and the names
// differ by architecture: a layer's output is l_out-N in most, l_last-N in some, a block's
// output under its own name in others, and a name is not proof of meaning (jamba names its
// mixer's output ffn_inp-N). So each role has candidate names, tried in order, and a candidate
// holds a role only once the survey proved it on the model (see point_survey.h).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hd::engine {

class Hook;

// What a point is to heterodyne, whatever the graph calls it.
enum class Role {
  kEmbedding,  // layer 0's whole input (users call it inp_embd)
  kResidual,   // a layer's whole output, the next layer's whole input (hook_resid_post)
  kMid,        // the whole state between a layer's attention and its MLP (hook_resid_mid)
  kPerHead,    // attention's output before its projection, heads side by side
  kAttnOut,    // attention's output after its projection (named; not needed by any analysis)
  kMlpOut,     // the MLP's output (named; not needed by any analysis)
};

// The graph names a role may have, in the order they are tried ("" + layer for per-layer
// roles: "l_out" is tried as "l_out-3").
const std::vector<std::string>& candidate_names(Role role);
bool per_layer(Role role);

// When a batch asks for logits at only some positions, the graph drops the other rows inside
// the last layer (ggml_get_rows on inp_out_ids, right after attention in llama.cpp's models):
// this says which points then carry output rows only. The survey checks it on each model: a
// point that does not keep the rows this predicts is not used.
bool point_has_output_rows_only(const std::string& name, int n_layer);

// The points of one model and what they allow.
struct PointMap {
  std::string architecture;
  int n_layer = 0;
  std::string embedding;                // "" when none was proven
  std::vector<std::string> residual;    // [n_layer]; "" where none was proven
  std::vector<std::string> mid;         // [n_layer]; "" where none was proven
  std::vector<std::string> per_head;    // [n_layer]; "" where a layer has none
  std::vector<std::string> attn_out;    // [n_layer]; "" where not named
  std::vector<std::string> mlp_out;     // [n_layer]; "" where not named
  // Routing, on the layers that route tokens to experts ("" on dense layers; build_moe_ffn):
  std::vector<std::string> router;         // [n_layer]: the router's probabilities over the experts
  std::vector<std::string> route_experts;  // [n_layer]: the experts chosen (i32 ids, best first)
  std::vector<std::string> route_weights;  // [n_layer]: the weights that mix their outputs
  int64_t n_expert = 0, n_expert_used = 0;  // on every routing layer (the survey checks)
  // The router point holds logits, not probabilities: the model takes a softmax over the chosen
  // experts only (gpt-oss: ffn_moe_weights_softmax-N).
  bool router_logits = false;
  std::string result_norm;              // "" when not named
  int64_t residual_width = 0;           // floats per token of every residual point
  // The points whose rows are not what point_has_output_rows_only predicts (measured): a model
  // that drops the other rows later than most, or not at all (diffusion models). Every hook on
  // this model's points is told (Hook::except_from_row_rule).
  std::vector<std::string> row_rule_exceptions;
  // Why an analysis cannot run on this model, one line each ("" when it can).
  std::string no_residuals;    // per-layer residual comparison
  std::string no_transplants;  // embedding and every layer's residual
  std::string no_components;   // and every layer's mid point
  std::string no_per_head;     // per-head taps on every attention layer (capture, head-diff)
  std::string no_floor;        // another ubatch split of the same arm (no KV cache: none)
  std::string no_routing;      // reading every MoE layer's routing (diff --routing)
  std::string no_routing_transplant;  // writing it (diff --routing-transplant)
  std::vector<std::string> proofs;  // one line per role, how it was proven or why not

  bool residuals() const { return no_residuals.empty(); }
  bool transplants() const { return no_transplants.empty(); }
  bool components() const { return no_components.empty(); }
  bool has_per_head() const { return no_per_head.empty(); }
  bool floor() const { return no_floor.empty(); }
  bool routing() const { return no_routing.empty(); }
  bool routing_transplant() const { return no_routing_transplant.empty(); }
  // The graph name of `role` at `layer` (-1 for the embedding), "" when there is none.
  const std::string& name(Role role, int layer = -1) const;
};

// Tells `hook` the map's row_rule_exceptions: every hook on the model's points needs them.
void tell_rows(const PointMap& m, Hook& hook);

nlohmann::json to_json(const PointMap& m);
// Throws RuntimeError when `j` is not a point map this build wrote.
PointMap point_map_from_json(const nlohmann::json& j);

// The analyses a map offers and the reasons for those it does not, one per line, for
// `heterodyne points` and a run's output: "transplants: yes", "components: no (…)".
std::vector<std::string> capability_lines(const PointMap& m);

}  // namespace hd::engine
