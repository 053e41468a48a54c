#include "engine/route_survey.h"

#include <fmt/format.h>

#include <cstring>

namespace hd::engine {
namespace {

// One routing layer's points.
struct RouteLayer {
  int layer = 0;
  std::string probs, experts, gathered, mixed;  // mixed: the final weights (the layer's own)
  int64_t n_expert = 0, n_used = 0;
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class Routes {
 public:
  Routes(const RouteSurvey& s, const PointMap& m) : s_(s), m_(m) {}

  // Every MoE layer's points into `layers`, or false with the reason in `why`.
  bool find_layers();
  bool gathers(const Hook& h, const RouteLayer& r, const Hook* ids_from = nullptr,
               int shift = 0) const;
  std::string check_reading();
  std::string check_writing();

  std::vector<RouteLayer> layers;
  std::string why;

 private:
  using Node = Hook::Node;
  const Node* node(const std::string& name) const {
    auto it = s_.nodes->find(name);
    return it == s_.nodes->end() ? nullptr : &it->second;
  }
  void watch(Hook& h, const std::string& name) const {
    h.capture(name);
    if (s_.excepted(name)) h.except_from_row_rule(name);
  }
  void patch(Hook& h, const std::string& name, std::vector<float> rows) const {
    h.overwrite(name, read_.first_row(name), rows);
    if (s_.excepted(name)) h.except_from_row_rule(name);
  }
  const RouteSurvey& s_;
  const PointMap& m_;
  Hook read_;  // the unpatched pass, every routing point captured
};

bool Routes::find_layers() {
  for (int l = 0; l < m_.n_layer; ++l) {
    RouteLayer r;
    r.layer = l;
    r.probs = fmt::format("ffn_moe_probs-{}", l);
    if (node(r.probs) == nullptr) continue;  // a dense layer
    r.experts = fmt::format("ffn_moe_topk-{}", l);
    r.gathered = fmt::format("ffn_moe_weights-{}", l);
    r.mixed = r.gathered;
    for (const char* later : {"ffn_moe_weights_softmax", "ffn_moe_weights_norm",
                              "ffn_moe_weights_scaled"}) {  // build_moe_ffn's order
      const std::string name = fmt::format("{}-{}", later, l);
      if (node(name) != nullptr) r.mixed = name;
    }
    for (const std::string* name : {&r.probs, &r.experts, &r.gathered, &r.mixed}) {
      const std::string bad = s_.unusable(*name);
      if (!bad.empty()) {
        why = fmt::format("{} {}", *name, bad);
        return false;
      }
    }
    r.n_used = node(r.experts)->width;
    r.n_expert = node(r.probs)->width;
    if (node(r.gathered)->width != r.n_used || node(r.mixed)->width != r.n_used ||
        node(r.probs)->rows != node(r.experts)->rows) {
      why = fmt::format("layer {}'s routing tensors disagree in shape", l);
      return false;
    }
    if (!layers.empty() &&
        (r.n_expert != layers.front().n_expert || r.n_used != layers.front().n_used)) {
      why = fmt::format("layer {} routes to {} of {} experts, layer {} to {} of {}", l, r.n_used,
                        r.n_expert, layers.front().layer, layers.front().n_used,
                        layers.front().n_expert);
      return false;
    }
    layers.push_back(r);
  }
  if (layers.empty()) {
    why = m_.architecture + " routes no tokens to experts (no layer names ffn_moe_probs-N)";
    return false;
  }
  return true;
}

// Whether `h`'s gathered weights are its probabilities at the experts `ids_from` holds (`h`'s
// own when null), each id moved by `shift`.
bool Routes::gathers(const Hook& h, const RouteLayer& r, const Hook* ids_from, int shift) const {
  const auto& probs = h.captured(r.probs);
  const auto& ids = (ids_from ? *ids_from : h).captured(r.experts);
  const auto& w = h.captured(r.gathered);
  const auto k = static_cast<size_t>(r.n_used), n_expert = static_cast<size_t>(r.n_expert);
  if (ids.size() != w.size() || probs.size() / n_expert != w.size() / k) return false;
  for (size_t i = 0; i < w.size(); ++i) {
    const auto e = static_cast<size_t>((static_cast<int64_t>(ids[i]) + shift) % r.n_expert);
    const size_t row = i / k;
    if (!same_bits(w[i], probs[row * n_expert + e])) {
      return false;
    }
  }
  return true;
}

std::string Routes::check_reading() {
  for (const auto& r : layers) {
    for (const std::string* name : {&r.probs, &r.experts, &r.gathered, &r.mixed}) watch(read_, *name);
  }
  std::vector<float> logits;
  s_.decode(&read_, logits);
  for (const auto& r : layers) {
    if (!gathers(read_, r)) {
      return fmt::format("{} is not {} at the experts {} names: the layer selects otherwise",
                         r.gathered, r.probs, r.experts);
    }
  }
  return "";
}

std::string Routes::check_writing() {
  std::vector<float> logits;
  for (const auto& r : layers) {  // each layer mixes by its own last weights node
    Hook halved;
    std::vector<float> w = read_.captured(r.mixed);
    for (float& x : w) x *= 0.5f;
    patch(halved, r.mixed, std::move(w));
    s_.decode(&halved, logits);
    if (logits == s_.logits) {
      return fmt::format("halving layer {}'s mixing weights ({}) leaves the logits as they were, "
                         "bit for bit: its experts' outputs do not reach them on this model, so "
                         "a routing transplant would prove nothing",
                         r.layer, r.mixed);
    }
  }
  Hook shifted;  // every layer sent to other experts: each id + 1
  for (const auto& r : layers) {
    std::vector<float> ids = read_.captured(r.experts);
    for (float& id : ids) id = static_cast<float>((static_cast<int64_t>(id) + 1) % r.n_expert);
    patch(shifted, r.experts, std::move(ids));
    watch(shifted, r.probs);
    watch(shifted, r.gathered);
  }
  s_.decode(&shifted, logits);
  for (const auto& r : layers) {
    if (!gathers(shifted, r, &read_, 1)) {
      return fmt::format("{} does not read the experts written into {}", r.gathered, r.experts);
    }
  }
  if (logits == s_.logits) {
    return "sending every MoE layer's tokens to other experts leaves the logits as they were";
  }
  Hook own;
  for (const auto& r : layers) {
    patch(own, r.experts, read_.captured(r.experts));
    patch(own, r.mixed, read_.captured(r.mixed));
  }
  s_.decode(&own, logits);
  if (logits != s_.logits) {
    return "writing a pass's own experts and weights back changes its logits";
  }
  return "";
}

// "ffn_moe_probs, ffn_moe_topk, ffn_moe_weights_norm on layers 1-3".
std::string routing_line(const std::vector<RouteLayer>& layers) {
  const auto base = [](const std::string& n) { return n.substr(0, n.rfind('-')); };
  std::string list;
  for (const auto& r : layers) list += fmt::format("{}{}", list.empty() ? "" : ", ", r.layer);
  const auto& r = layers.front();
  return fmt::format("{}, {}, {} (mixing weights) on layers {}", base(r.probs), base(r.experts),
                     base(r.mixed), list);
}

}  // namespace

void survey_routes(const RouteSurvey& s, PointMap& m) {
  const size_t n = static_cast<size_t>(m.n_layer);
  m.router.assign(n, "");
  m.route_experts.assign(n, "");
  m.route_weights.assign(n, "");
  Routes routes(s, m);
  if (!routes.find_layers() || !(routes.why = routes.check_reading()).empty()) {
    m.no_routing = m.no_routing_transplant = routes.why;
    if (!routes.layers.empty()) m.proofs.push_back("routing: none (" + routes.why + ")");
    return;
  }
  m.n_expert = routes.layers.front().n_expert;
  m.n_expert_used = routes.layers.front().n_used;
  // gpt-oss: probs are the logits, softmaxed over the chosen experts only (build_moe_ffn's
  // LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT).
  m.router_logits = s.nodes->count(fmt::format("ffn_moe_weights_softmax-{}",
                                               routes.layers.front().layer)) > 0;
  for (const auto& r : routes.layers) {
    const size_t l = static_cast<size_t>(r.layer);
    m.router[l] = r.probs;
    m.route_experts[l] = r.experts;
    m.route_weights[l] = r.mixed;
  }
  m.no_routing_transplant = routes.check_writing();
  m.proofs.push_back(fmt::format("routing: {}; read {}", routing_line(routes.layers),
                                 m.no_routing_transplant.empty()
                                     ? "and written"
                                     : "only (" + m.no_routing_transplant + ")"));
}

}  // namespace hd::engine
