// Finding a MoE model's routing points and proving that reading and writing them means what
// the routing analyses take it to mean (point_survey.cpp calls this; engine/ only).
//
// On a layer that routes, build_moe_ffn names the router's probabilities ffn_moe_probs-N
// ([n_expert, rows]), the chosen experts ffn_moe_topk-N (i32 [n_used, rows], best first: a
// strided view of ffn_moe_argsort-N) and the weights that mix them: ffn_moe_weights-N (the
// probabilities at the chosen experts), then, depending on the model, _softmax, _norm and
// _scaled; the last one named is what the layer multiplies by. A layer's routing is read only
// when, on a pass over the survey's tokens:
//   - ffn_moe_weights-N equals ffn_moe_probs-N gathered at ffn_moe_topk-N, bit for bit (the ids
//     read are the ones the layer used; grovemoe's grouped experts fail here);
// and written only when, in addition:
//   - writing other experts (each id + 1, mod n_expert) into every ffn_moe_topk-N makes each
//     ffn_moe_weights-N the probabilities at the written ids (downstream reads what was
//     written; a backend that fuses top-k without showing the node fails by name) and changes
//     the logits;
//   - writing one layer's final weights halved changes the logits, layer by layer (the layer
//     mixes by that node);
//   - writing each layer's own experts and final weights back gives the logits bit for bit.
// The other-experts and write-back checks cover all MoE layers at once; the rest hold per layer.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/hook.h"
#include "engine/points.h"

namespace hd::engine {

struct RouteSurvey {
  const std::map<std::string, Hook::Node>* nodes = nullptr;  // every node of the graph
  // Why a name cannot be a point ("" when it can), and whether it keeps other rows than
  // point_has_output_rows_only predicts (both as the survey measured them).
  std::function<std::string(const std::string&)> unusable;
  std::function<bool(const std::string&)> excepted;
  // A pass over the survey's first sequence with `hook` (may be null), its logits out.
  std::function<void(Hook*, std::vector<float>&)> decode;
  std::vector<float> logits;  // that pass's logits without a hook
};

// Sets m.router, m.route_experts, m.route_weights, m.no_routing and m.no_routing_transplant
// (and adds a "routing:" line to m.proofs on a model that routes).
void survey_routes(const RouteSurvey& s, PointMap& m);

}  // namespace hd::engine
