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

#include "analysis/kl.h"
#include "engine/arm.h"
#include "engine/hook.h"
#include "engine/model.h"
#include "engine/points.h"

namespace hd::run {

// One text's chunks and A's logits at their scored positions (every position but the last).
struct ScoredText {
  std::vector<std::vector<int32_t>> chunks;
  std::vector<std::vector<float>> logits_a;  // per chunk: [n - 1][n_vocab]
  // A's probabilities and top-1 per scored position, computed once for every variant (the same
  // bits score_position computes each time); empty where they would take too much memory.
  std::vector<analysis::KlReference> reference;
  std::vector<std::vector<int32_t>> top1_a;
};

// Fills text.reference and text.top1_a, where they take at most a GiB. Call it where `text`
// stays: the references read its logits in place.
void keep_a_reference(ScoredText& text, size_t n_vocab);

// A model's mean KL(A || model) and top-1 change rate over a text's scored positions.
struct TextScore {
  double kl_mean = 0;
  double top1_change_rate = 0;
};

// A start's pass over one text, kept for the variants of its round.
struct StartRows {
  std::vector<engine::Hook> chunks;  // per chunk: every boundary's rows
  std::vector<float> logits0;        // chunk 0's logits, from the pass that kept them
};

// The points a pass may start at, and which were proven.
struct Boundaries {
  // In forward order: the embedding, then per layer L its residual after attention (the MLP's
  // input, points[2L + 1]) and its output (points[2L + 2]; the last enters the output norm and
  // head). Empty: no reuse on this model.
  std::vector<std::string> points;
  std::vector<int> start;  // per k: the latest proven start at or before k, -1 for none
};

class PassRunner {
 public:
  // A model's chunks run on up to default_threads() contexts (one per chunk at most), the
  // threads shared among them. reuse = false: every pass from the tokens, on one context of
  // every thread (what recommend did before the reuse).
  PassRunner(const std::shared_ptr<engine::Model>& a, int chunk, bool reuse);

  // A model loaded with its contexts, for all the texts it is scored on.
  struct Contexts {
    std::shared_ptr<engine::Model> model;
    std::vector<std::unique_ptr<engine::Arm>> arms;
    Contexts();
    ~Contexts();
    Contexts(Contexts&&) noexcept;
  };
  Contexts open(const std::string& path, size_t chunks) const;

  // The model at `path` against A on `text`. `keep`: the pass is a start's; its rows at every
  // boundary are kept there. `from`, `k`: the pass starts at boundary k from those rows (k at
  // or below 0, or no `from`: from the tokens). `proof` (a group's first variant): chunk 0 runs
  // from the tokens (no hook: the pass --no-reuse scores) and from boundary k too, and the start
  // is used only where both give the same logits, bit for bit; *proof is "" then, else why
  // not, and every chunk runs from the tokens. The held-out text's passes rely on that proof.
  TextScore score(Contexts& model, const ScoredText& text, StartRows* keep, const StartRows* from,
                  int k, std::string* proof) const;
  TextScore score(const std::string& path, const ScoredText& text) const;

  // Proves the boundaries on the start at `path` from its kept rows of text's first chunk and
  // its logits there; afterwards boundaries().start says where a variant may start. Returns
  // why no variant may start anywhere ("" when some may, or reuse is off): the rows were too
  // large to keep, or the passes that kept them gave other logits than a plain pass (the
  // start is then scored again without them).
  std::string prove_starts(const std::string& path, const ScoredText& text, const StartRows& kept);

  // How many points after the embedding were proven as starts, of how many.
  std::pair<int, int> proven_starts() const;

  // The boundary a variant changing `tensors` may start at (-1: none): the latest proven at or
  // before the first point that reads them (first_changed_point).
  int start_for(const std::vector<std::string>& tensors) const;

  // The bytes a start's rows take over `chunks` chunks of `n` tokens, and whether that is
  // within what recommend keeps in memory.
  uint64_t rows_bytes(size_t chunks, int n) const;

 private:
  // One chunk's scores: per position the KL (summed later in position order) and the flips.
  struct ChunkScore {
    std::vector<double> kl;
    int64_t flips = 0;
  };
  void pass(engine::Arm& arm, const ScoredText& text, size_t c, StartRows* keep,
            const StartRows* from, int k, std::string* why, std::vector<float>& out) const;
  void score_chunk(const ScoredText& text, size_t c, const std::vector<float>& out,
                   analysis::ScoreScratch& scratch, ChunkScore& s) const;

  std::shared_ptr<engine::Model> a_;
  int chunk_;
  int threads_ = 1;
  bool parallel_ = true;
  engine::PointMap map_;
  Boundaries bounds_;
};

// A start's rows are kept in memory for its round while a text's take at most this; past it
// every variant runs from the tokens (the same numbers, more time).
inline constexpr uint64_t kMaxStartRowBytes = 2ull << 30;

// The bytes a start's rows take over `chunks` chunks of `n` tokens: every point but the
// embedding, 2 per layer, n_embd floats a token.
inline uint64_t start_row_bytes(size_t chunks, int n, int64_t n_embd, int n_layer) {
  return static_cast<uint64_t>(chunks) * static_cast<uint64_t>(n) * static_cast<uint64_t>(n_embd) *
         sizeof(float) * 2 * static_cast<uint64_t>(n_layer);
}

// The last point of Boundaries a group's tensors cannot change, on the architectures prefix
// reuse applies to (llama, qwen2, qwen3: each layer reads only its own tensors, its attention
// before its MLP): blk.L.ffn_* -> 2L + 1 (after layer L's attention), any other blk.L.* -> 2L
// (layer L's input), output.weight -> 2 n_layer (the head alone), anything else -> 0 (token_embd:
// the whole pass). The least over the group. Proven per group before use (score's `proof`).
int first_changed_point(const std::vector<std::string>& tensors, int n_layer);

}  // namespace hd::run
