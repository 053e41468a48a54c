// Prefix reuse for patched passes: a pass patched at a restore point repeats the unpatched pass
// exactly up to that point, so it starts there instead, on the arm's own loaded weights and
// context: the point's rows are given and llama.cpp computes only the graph after it
// (engine::Arm::run_from, llama_set_graph_start from scripts/llama-graph-start.patch). Nothing
// is copied or written to disk.
//
// A start is used only once proven on the arm's first chunk: the first start of an arm, fed the
// arm's own rows there, must reproduce the arm's own logits bit for bit (the whole rest of the
// graph), and every later start must reproduce the arm's own next restore point bit for bit
// (the pass stops there, so the check costs one block). llama.cpp itself refuses a start whose
// skipped nodes the rest reads through memory (a KV cache shared between layers). A start that
// fails is never used: its patches start at an earlier proven one or run full passes, and the
// experiment's provenance says which and why.
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/arm.h"
#include "engine/points.h"

namespace hd::run {

// Whether starts are tried on an architecture at all. Feeding rows through llama_batch.embd
// is a path most graphs never take, and on some llama.cpp aborts the process rather than
// failing (llama4's attention temperature input has no buffer then: measured on its fixture),
// so only the architectures whose starts the tests prove take it; the others run full passes,
// which give the same numbers.
bool prefix_reuse_applies(const std::string& architecture);

class PrefixReuse {
 public:
  // `points`: the restore points' graph names in forward order (points[0] is the embedding,
  // never a start).
  PrefixReuse(engine::Arm& arm, const engine::PointMap& map, std::vector<std::string> points);

  // The latest proven start at or before point k (k itself when it is one), or -1 for none.
  // `own` and `own_logits` are the arm's unpatched pass of the current chunk, which proves a
  // start the first time it is asked for.
  int start_for(int k, const engine::Hook& own, std::span<const float> own_logits, int n_tokens,
                int first_output);
  const std::string& point(int k) const { return points_.at(static_cast<size_t>(k)); }

  nlohmann::json report() const;  // {verified: [names], fell_back: [{point, why}]}

 private:
  std::string prove(int k, const engine::Hook& own, std::span<const float> own_logits,
                    int n_tokens, int first_output);  // "" when proven, else why not

  engine::Arm& arm_;
  const engine::PointMap& map_;
  std::vector<std::string> points_;
  std::vector<int> state_;  // 0 unknown, 1 proven, -1 not a start
  std::vector<std::string> why_;
  bool whole_proven_ = false;  // a start of this arm reproduced the logits
};

}  // namespace hd::run
