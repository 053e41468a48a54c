// How two arms route one token at one MoE layer, and the plug-ins that report it
// (routing.cpp: per layer and per position; routing_load.cpp: tokens per expert;
// routing_transplant.cpp: the divergence routing changes cause). Pure functions.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analysis/plugin.h"

namespace hd::analysis {

// One arm's routing of one token at one layer, as the graph holds it: the router's
// probabilities over the n_expert experts, the n_used experts chosen (ids, best first) and the
// weights that mix their outputs.
struct Route {
  std::span<const float> probs;    // [n_expert]
  std::span<const float> experts;  // [n_used]
  std::span<const float> weights;  // [n_used]
};

struct RouteChange {
  bool set_changed = false;   // another set of experts
  bool top1_changed = false;  // another best expert
  double jaccard = 1;         // |A ∩ X| / |A ∪ X| of the sets
  // KL(A || X) over the router's probabilities, each normalized to sum 1 (a sigmoid router's do
  // not): how far the router moved, whether or not the choice did.
  double router_kl = 0;
  // Half the L1 distance between the two arms' mixing weights over all experts, each arm's
  // normalized to sum 1: 0 when the same experts mix in the same proportions, 1 when no expert
  // is shared.
  double weight_moved = 0;
  // A's probability of its weakest chosen expert minus that of its strongest expert not chosen
  // (NaN when every expert is chosen): how near A's choice was to another.
  double margin_a = 0;
};

// `logits`: the routes' probs are router logits (gpt-oss), turned into probabilities by a
// softmax over all experts first. Throws std::invalid_argument on routes of different shapes
// or ids outside [0, n_expert).
RouteChange compare_routes(const Route& a, const Route& x, bool logits = false);

// "3 7": the experts, best first, as the stored rows hold them.
std::string experts_text(std::span<const float> experts);

std::unique_ptr<ChunkAnalysis> make_routing_analysis();
std::unique_ptr<ChunkAnalysis> make_routing_load_analysis();
std::unique_ptr<ChunkAnalysis> make_routing_transplant_analysis();

// The MoE layers of a model's points, in order.
std::vector<int> routed_layers(const ModelPoints& m);

// The flags of the routing analyses: `diff --<diff_flag>` adds them (routing and routing_load
// share --routing), `show --routing` prints all three tables and the map.
Shortcut routing_shortcut(const std::string& diff_flag, const std::string& diff_help);
inline constexpr const char* kRoutingHelp =
    "MoE models: where and how the arms route tokens to other experts, per layer and position, "
    "and each expert's load (--analysis routing,routing_load)";

// The map routing draws under its table (ChunkAnalysis::map): where B chose other experts than
// A, layer × position, the first few chunks, as lines of text.
std::vector<std::string> routing_map(const std::vector<StoredRow>& rows);

}  // namespace hd::analysis
