// Prefix reuse for patched passes: a pass patched at a restore point repeats the unpatched pass
// exactly up to that point, so it can start there instead. A "tail" is the arm's model without
// its first s layers (engine::ensure_tail_model); fed a residual through llama_batch.embd it
// runs layers s..L-1. A tail is used only after it reproduced its arm's own unpatched logits
// bit for bit on the first chunk; otherwise the arm falls back to full passes and says so.
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "analysis/restore_points.h"
#include "engine/arm.h"

namespace hd::run {

// Whether tails are tried on an architecture at all. Feeding a residual through llama_batch.embd
// is a path most graphs never take, and on some llama.cpp aborts the process rather than
// failing (llama4's attention temperature input has no buffer then: measured on its fixture),
// so only the architectures whose tails the tests prove take it; the others run full passes,
// which give the same numbers.
bool prefix_reuse_applies(const std::string& architecture);

// The split points used for a model of n_layer layers: about seven, evenly spaced.
std::vector<int> tail_splits(int n_layer);

class Tails {
 public:
  Tails(const engine::ArmSettings& settings, int chunk, const std::vector<int>& splits);

  // What to run for a patch at `point` of an arm: the largest usable split s with
  // s <= N + 1 (after layer N's MLP) or s <= N (after its attention); 0 when none.
  int split_for(const analysis::RestorePoint& point) const;
  engine::Arm& tail(int s) { return *arms_.at(s).arm; }

  // First use of a split: does the tail fed the arm's own l_out-(s-1) reproduce the arm's
  // own logits bitwise? Decided once; the answer is kept.
  bool usable(int s, std::span<const float> own_residual, int n_tokens,
              std::span<const float> own_logits, int first_output);

  nlohmann::json report() const;  // {splits, verified: [...], fell_back: [...]}

 private:
  struct Entry {
    std::unique_ptr<engine::Arm> arm;
    int state = 0;  // 0 unknown, 1 bitwise identical, -1 not
  };
  std::map<int, Entry> arms_;
  std::vector<float> logits_;
};

}  // namespace hd::run
