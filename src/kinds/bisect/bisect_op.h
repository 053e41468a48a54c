// Where two llama.cpp builds' numbers part on a model: the gate's taps (run/capture.h) of both
// builds on the same tokens, compared bit for bit in forward order, then every graph node
// between the last tap that is still identical and the first that is not, so that the answer is
// a node and the ggml op that writes it. The decode steps after the prompt are compared too:
// whether single-token decode also differs.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "common/progress.h"
#include "kinds/bisect/bisect.h"

namespace hd::kinds::bisect {

// {tokens, decode_steps, first_tap: {name, layer, max_abs, rel_err} | null (every tap the same),
//  last_same_tap, first_node: {name, op, max_abs, rel_err, uncompared_before: [{name, op, why}]
//  (the nodes since the last identical one that could not be compared: the change may begin in
//  one of them)} | null, nodes_compared,
//  nodes_missing (names one build does not have), uncompared (where no node compared differs:
//  the nodes that could not be), decode: {differs, first_tap} }. The nodes and their ops are
//  those of this binary's llama.cpp graph (the survey's), by name in both builds.
nlohmann::json first_divergence(const BisectConfig& c, const std::string& good_worker,
                                const std::string& bad_worker, const ProgressFn& progress);

}  // namespace hd::kinds::bisect
