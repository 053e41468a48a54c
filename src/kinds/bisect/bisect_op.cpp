#include "kinds/bisect/bisect_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>

#include "analysis/residual.h"
#include "common/stop.h"
#include "engine/arm.h"
#include "engine/hook.h"
#include "engine/model.h"
#include "engine/point_survey.h"
#include "errors.h"
#include "run/capture.h"
#include "run/input.h"

namespace hd::kinds::bisect {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// max |Δ| and ||Δ|| / ||A|| (analysis::residual_diff over the whole tensor; null where A is
// all zeros), over the values both have where the shapes differ.
nlohmann::json difference(const std::string& name, const std::vector<float>& a,
                          const std::vector<float>& b) {
  const size_t n = std::min(a.size(), b.size());
  const analysis::ResidualDiff d =
      analysis::residual_diff(std::span(a.data(), n), std::span(b.data(), n));
  nlohmann::json j = {{"name", name}, {"max_abs", d.max_abs}};
  j["rel_err"] = std::isfinite(d.rel_err) ? nlohmann::json(d.rel_err) : nlohmann::json(nullptr);
  if (a.size() != b.size()) j["shapes_differ"] = true;
  return j;
}

// The settings of the model run by one build's worker.
engine::ArmSettings on_build(const BisectConfig& c, const std::string& worker) {
  engine::ArmSettings s = c.arm;
  s.llama_build = worker;
  return s;
}

// Graph nodes after `after` up to and including `upto` (names of the pinned build's survey, in
// graph order): the places the divergence can begin.
std::vector<engine::Hook::Node> nodes_between(const std::vector<engine::Hook::Node>& nodes,
                                              const std::string& after, const std::string& upto) {
  std::vector<engine::Hook::Node> out;
  // An `after` this graph does not name (another build's tap name): from the first node on.
  bool on = after.empty() || std::none_of(nodes.begin(), nodes.end(),
                                          [&](const auto& n) { return n.name == after; });
  for (const auto& n : nodes) {
    if (on) out.push_back(n);
    if (n.name == upto) break;
    if (n.name == after) on = true;
  }
  return out;
}

// Why a node cannot be captured and compared ("" when it can): a name the graph gives several
// nodes (llama's "norm-N": the attention's and the MLP's RMS norm) or a tensor no point reads
// (a view, a permutation, a cache write).
std::string uncomparable(const engine::Hook::Node& n) {
  static const std::regex unnamed("node_[0-9]+");
  if (std::regex_match(n.name, unnamed))
    return "unnamed (ggml numbers it by its place in the graph, which differs between builds)";
  if (n.count != 1) return std::to_string(n.count) + " nodes of this name";
  if (!n.readable) return "not a contiguous F32 tensor";
  return "";
}

// Node `name` captured in `arm` on `tokens`; nullopt where the build's graph has no such node.
std::optional<std::vector<float>> node_rows(engine::Arm& arm, const std::string& name,
                                            const std::vector<int32_t>& tokens) {
  engine::Hook hook;
  hook.capture(name);
  std::vector<float> logits;
  try {
    arm.run_chunk(tokens, &hook, logits, 0);
    std::vector<float> rows = hook.captured(name);
    if (rows.empty()) return std::nullopt;
    return rows;
  } catch (const RuntimeError&) {
    if (stop_requested()) throw Stopped("stopped");  // a worker Ctrl-C killed is no missing node
    return std::nullopt;
  }
}

}  // namespace

nlohmann::json first_divergence(const BisectConfig& c, const std::string& good_worker,
                                const std::string& bad_worker, const ProgressFn& progress) {
  auto model = engine::model_load(c.arm.model);
  std::vector<engine::Hook::Node> nodes;
  const engine::PointMap points = engine::survey_points(model, &nodes);
  const run::Input input = run::read_input({c.text_file, c.token_ids}, false);
  const auto quiet = [](const std::string&) {};
  const int steps = std::max(0, std::min(c.decode_steps, model->info().n_ctx_train - c.chunk));
  const std::vector<int32_t> tokens = run::input_chunks(*model, input, false, c.chunk, 1, quiet).at(0);
  progress("capturing every tap of both builds on the first chunk, and " +
           std::to_string(steps) + " decode steps");
  const run::Captured good = run::capture_taps(model, on_build(c, good_worker), tokens, steps, {}, &points);
  const run::Captured bad =
      run::capture_taps(model, on_build(c, bad_worker), tokens, steps, good.continuation, &points);
  nlohmann::json out = {{"tokens", tokens.size()}, {"decode_steps", steps},
                        {"first_tap", nullptr}, {"last_same_tap", nullptr},
                        {"first_node", nullptr}, {"decode", {{"differs", false}, {"first_tap", nullptr}}}};
  std::string last_same_graph, first_graph;
  for (size_t i = 0; i < good.tensors.size(); ++i) {
    const auto& a = good.tensors[i];
    const bool step = a.name.find('@') != std::string::npos;
    if (same_bits(a.data, bad.tensors.at(i).data)) {
      if (!step && out["first_tap"].is_null()) {
        out["last_same_tap"] = a.name;
        for (const auto& t : good.taps) if (t.name == a.name) last_same_graph = t.graph_name;
      }
      continue;
    }
    if (step) {
      if (!out["decode"]["differs"].get<bool>()) out["decode"] = {{"differs", true}, {"first_tap", difference(a.name, a.data, bad.tensors[i].data)}};
    } else if (out["first_tap"].is_null()) {
      out["first_tap"] = difference(a.name, a.data, bad.tensors[i].data);
      for (const auto& t : good.taps) if (t.name == a.name) first_graph = t.graph_name;
    }
  }
  if (first_graph.empty()) return out;
  // The nodes between: each captured in both builds, one pass each (a node one build lacks is
  // passed over and named).
  engine::Arm arm_good(model, on_build(c, good_worker), c.chunk);
  engine::Arm arm_bad(model, on_build(c, bad_worker), c.chunk);
  nlohmann::json missing = nlohmann::json::array();
  int compared = 0;
  // Nodes that could not be compared since the last one that was identical: the divergence may
  // begin in any of them, so they are named with the first node that differs.
  nlohmann::json unseen = nlohmann::json::array();
  for (const auto& n : nodes_between(nodes, last_same_graph, first_graph)) {
    if (const std::string why = uncomparable(n); !why.empty()) {
      unseen.push_back({{"name", n.name}, {"op", n.op}, {"why", why}});
      continue;
    }
    const auto a = node_rows(arm_good, n.name, tokens);
    const auto b = node_rows(arm_bad, n.name, tokens);
    if (!a || !b || a->size() != b->size()) {
      missing.push_back(n.name);
      unseen.push_back({{"name", n.name}, {"op", n.op}, {"why", "one build has no such node"}});
      continue;
    }
    ++compared;
    if (!same_bits(*a, *b)) {
      out["first_node"] = difference(n.name, *a, *b);
      out["first_node"]["op"] = n.op;
      out["first_node"]["uncompared_before"] = unseen;
      break;
    }
    unseen = nlohmann::json::array();
  }
  out["nodes_compared"] = compared;
  out["nodes_missing"] = missing;
  if (out["first_node"].is_null()) out["uncompared"] = unseen;  // where it may begin, then
  return out;
}

}  // namespace hd::kinds::bisect
