// How recommend runs a model over a text: its chunks spread over several contexts of the same
// loaded model (each chunk still one batch from an empty cache, so the logits are the bits one
// context gives at any thread count: tests/test_threads.cpp), every position scored by the
// context that ran it and the totals summed in position order, as one context would.
//
// Prefix reuse: a variant differs from its round's start in one group of tensors, in layer L or
// later; the residual entering layer L is then the start's, bit for bit (the same bytes of
// every tensor before it: kinds/recommend/recommend_variants.h), so the variant's pass starts
// there from the start's rows (engine::Arm::run_from). The start's pass keeps its rows at every
// layer boundary; each boundary is used only once proven on the start itself (run::PrefixReuse:
// run from its own rows, the start reproduces its own logits or next boundary bit for bit).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/hook.h"
#include "engine/model.h"
#include "engine/points.h"

namespace hd::run {

// One text's chunks and A's logits at their scored positions (every position but the last).
struct ScoredText {
  std::vector<std::vector<int32_t>> chunks;
  std::vector<std::vector<float>> logits_a;  // per chunk: [n - 1][n_vocab]
};

// A model's mean KL(A || model) and top-1 change rate over a text's scored positions.
struct TextScore {
  double kl_mean = 0;
  double top1_change_rate = 0;
};

// A start's pass over one text, kept for the variants of its round.
struct StartRows {
  std::vector<engine::Hook> chunks;  // per chunk: every boundary's rows
};

// The layer boundaries a pass may start at, and which were proven.
struct Boundaries {
  // points[k]: the graph node entering layer k (k = 0: the embedding; k = n_layer: the last
  // layer's output, entering the output norm and head). Empty: no reuse on this model.
  std::vector<std::string> points;
  std::vector<int> start;  // per k: the latest proven start at or before k, -1 for none
  std::string why_not;     // why there is no reuse ("" when there is)
};

class PassRunner {
 public:
  // A model's chunks run on up to default_threads() contexts (one per chunk at most), the
  // threads shared among them. reuse = false: every pass from the tokens.
  PassRunner(const std::shared_ptr<engine::Model>& a, int chunk, bool reuse);

  int threads() const { return threads_; }
  const Boundaries& boundaries() const { return bounds_; }

  // The model at `path` against A on `text`. `keep`: the pass is a start's; its rows at every
  // boundary are kept there. `from`, `k`: the pass starts at boundary k from those rows (k at
  // or below 0, or no `from`: from the tokens).
  TextScore score(const std::string& path, const ScoredText& text, StartRows* keep,
                  const StartRows* from, int k) const;

  // Proves the boundaries on the start at `path` from its kept rows of text's first chunk and
  // its logits there; afterwards boundaries().start says where a variant may start.
  void prove_starts(const std::string& path, const ScoredText& text, const StartRows& kept);

  // The boundary a variant whose first changed layer is `layer` may start at (-1: none).
  // layer = n_layer: only the output head changed.
  int start_for_layer(int layer) const;

  // The bytes a start's rows take over `chunks` chunks of `n` tokens, and whether that is
  // within what recommend keeps in memory.
  uint64_t rows_bytes(size_t chunks, int n) const;

 private:
  std::shared_ptr<engine::Model> a_;
  int chunk_;
  int threads_ = 1;
  engine::PointMap map_;
  Boundaries bounds_;
};

// The first layer a group's tensors touch: blk.N's N (the least over the group), n_layer for
// output.weight alone (the head), 0 for anything else (token_embd: the whole pass).
int first_changed_layer(const std::vector<std::string>& tensors, int n_layer);

}  // namespace hd::run
