#include "kinds/recommend/recommend_passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <thread>

#include "analysis/kl.h"
#include "engine/arm.h"
#include "engine/point_survey.h"
#include "engine/threads.h"
#include "errors.h"
#include "run/prefix.h"
#include "run/scoring.h"

namespace hd::run {
namespace {

// Runs fn(worker, chunk) for every chunk, each worker on its own thread taking the next chunk
// not yet taken (a chunk's result lands in its own place: the order they finish in changes
// nothing); the first exception is rethrown once all have stopped.
template <typename Fn>
void on_workers(int workers, size_t chunks, Fn&& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  auto work = [&](int w) {
    try {
      for (size_t c = next++; c < chunks; c = next++) fn(w, c);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

engine::ArmSettings settings_of(const std::string& path, int threads) {
  engine::ArmSettings s;
  s.model = path;
  s.n_threads = threads;
  return s;
}

}  // namespace

int first_changed_point(const std::vector<std::string>& tensors, int n_layer) {
  int first = 2 * n_layer;
  for (const std::string& t : tensors) {
    int point = -1;
    if (t == "output.weight") {
      point = 2 * n_layer;
    } else if (t.rfind("blk.", 0) == 0) {
      const size_t dot = t.find('.', 4);
      const std::string digits = dot == std::string::npos ? "" : t.substr(4, dot - 4);
      if (!digits.empty() && digits.size() < 6 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        const int layer = std::stoi(digits);
        point = 2 * layer + (t.compare(dot + 1, 4, "ffn_") == 0 ? 1 : 0);
        if (layer >= n_layer) point = -1;
      }
    }
    if (point < 0) return 0;  // not a layer's: the whole pass
    first = std::min(first, point);
  }
  return first;
}

void keep_a_reference(ScoredText& text, size_t n_vocab) {
  size_t floats = 0;
  for (const auto& l : text.logits_a) floats += l.size();
  text.reference.clear();
  text.top1_a.clear();
  if (floats * sizeof(double) > (size_t{1} << 30)) return;
  text.reference.resize(text.logits_a.size());
  for (size_t c = 0; c < text.logits_a.size(); ++c) {
    text.reference[c].set(text.logits_a[c], n_vocab);
    auto& top = text.top1_a.emplace_back();
    for (size_t r = 0; r < text.logits_a[c].size() / n_vocab; ++r)
      top.push_back(analysis::top1({text.logits_a[c].data() + r * n_vocab, n_vocab}));
  }
}

PassRunner::PassRunner(const std::shared_ptr<engine::Model>& a, int chunk, bool reuse)
    : a_(a), chunk_(chunk) {
  // As many contexts as threads, one thread each where there are as many chunks: a small
  // model's layers are too short for threads to share well (measured: docs/recommend.md).
  threads_ = std::max(1, engine::default_threads());
  parallel_ = reuse;  // --no-reuse: one context of every thread, as recommend ran before
  // No points (every pass from the tokens): --no-reuse, an architecture whose passes are not
  // proven to start mid-graph, or a model whose mid points the survey did not prove.
  if (!reuse || !prefix_reuse_applies(a->info().architecture)) return;
  map_ = engine::survey_points(a);
  if (!map_.components()) return;
  const int n_layer = a->info().n_layer;
  bounds_.points.push_back(map_.name(engine::Role::kEmbedding));
  for (int l = 0; l < n_layer; ++l) {
    bounds_.points.push_back(map_.name(engine::Role::kMid, l));
    bounds_.points.push_back(map_.name(engine::Role::kResidual, l));
  }
  bounds_.start.assign(bounds_.points.size(), -1);
}

uint64_t PassRunner::rows_bytes(size_t chunks, int n) const {
  if (bounds_.points.empty()) return 0;
  return start_row_bytes(chunks, n, a_->info().n_embd, a_->info().n_layer);
}

std::pair<int, int> PassRunner::proven_starts() const {
  int proven = 0;
  for (size_t k = 1; k < bounds_.start.size(); ++k)
    proven += bounds_.start[k] == static_cast<int>(k);
  return {proven, static_cast<int>(bounds_.points.empty() ? 0 : bounds_.points.size() - 1)};
}

int PassRunner::start_for(const std::vector<std::string>& tensors) const {
  if (bounds_.points.empty()) return -1;
  const int k = first_changed_point(tensors, a_->info().n_layer);
  return k <= 0 ? -1 : bounds_.start[static_cast<size_t>(k)];
}

static bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

PassRunner::Contexts::Contexts() = default;
PassRunner::Contexts::~Contexts() = default;
PassRunner::Contexts::Contexts(Contexts&&) noexcept = default;

PassRunner::Contexts PassRunner::open(const std::string& path, size_t chunks) const {
  Contexts c;
  c.model = engine::model_load(path);
  const int workers =
      parallel_ ? std::max(1, std::min<int>(threads_, static_cast<int>(chunks))) : 1;
  for (int w = 0; w < workers; ++w) {
    c.arms.push_back(
        std::make_unique<engine::Arm>(c.model, settings_of(path, threads_ / workers), chunk_));
  }
  return c;
}

TextScore PassRunner::score(const std::string& path, const ScoredText& text) const {
  Contexts c = open(path, text.chunks.size());
  return score(c, text, nullptr, nullptr, 0, nullptr);
}

// Chunk c's pass on `arm` into `out`: from the tokens, keeping every boundary's rows in `keep`,
// or started at boundary k from `from`'s rows. Proving (chunk 0 of a group's first variant):
// from the tokens, and started too; *why says whether both reach the same bits.
void PassRunner::pass(engine::Arm& arm, const ScoredText& text, size_t c, StartRows* keep,
                      const StartRows* from, int k, std::string* why,
                      std::vector<float>& out) const {
  const auto& tokens = text.chunks[c];
  const int n = static_cast<int>(tokens.size());
  if (from && !why) {
    const std::string& point = bounds_.points[static_cast<size_t>(k)];
    arm.run_from(point, from->chunks[c].captured(point), n, nullptr, out);
  } else if (from) {
    // The pass --no-reuse runs (from the tokens, no hook) is what this chunk is scored on; the
    // start holds only where the pass started at the point gives those logits bit for bit.
    const std::string& point = bounds_.points[static_cast<size_t>(k)];
    arm.run_chunk(tokens, nullptr, out);
    std::vector<float> started;
    try {
      arm.run_from(point, from->chunks[c].captured(point), n, nullptr, started);
      if (!same_bits(out, started)) *why = "its pass started at " + point + " gives other logits";
    } catch (const RuntimeError& e) {
      *why = std::string("its pass cannot start at ") + point + ": " + e.what();
    }
  } else if (keep) {
    engine::Hook& h = keep->chunks[c];
    engine::tell_rows(map_, h);
    for (size_t p = 1; p < bounds_.points.size(); ++p)
      h.capture(bounds_.points[p]);  // not the embedding
    arm.run_chunk(tokens, &h, out);
    if (c == 0) keep->logits0 = out;
  } else {
    arm.run_chunk(tokens, nullptr, out);
  }
}

TextScore PassRunner::score(Contexts& contexts, const ScoredText& text, StartRows* keep,
                            const StartRows* from, int k, std::string* proof) const {
  const size_t n_chunks = text.chunks.size();
  auto& arms = contexts.arms;
  const int workers =
      std::max(1, std::min<int>(static_cast<int>(arms.size()), static_cast<int>(n_chunks)));
  const bool keeping =
      keep && !bounds_.points.empty() && rows_bytes(n_chunks, chunk_) <= kMaxStartRowBytes;
  if (keep) keep->chunks.assign(keeping ? n_chunks : 0, engine::Hook{});
  const bool starting = from && k > 0 && from->chunks.size() == n_chunks;
  if (proof) proof->clear();
  std::vector<ChunkScore> scores(n_chunks);
  std::vector<std::vector<float>> logits(static_cast<size_t>(workers));
  std::vector<analysis::ScoreScratch> scratch(static_cast<size_t>(workers));
  on_workers(workers, n_chunks, [&](int w, size_t c) {
    auto& out = logits[static_cast<size_t>(w)];
    pass(*arms[static_cast<size_t>(w)], text, c, keeping ? keep : nullptr,
         starting ? from : nullptr, k, starting && c == 0 ? proof : nullptr, out);
    score_chunk(text, c, out, scratch[static_cast<size_t>(w)], scores[c]);
  });
  // A start that did not prove: every chunk again from the tokens.
  if (proof && !proof->empty()) return score(contexts, text, nullptr, nullptr, 0, nullptr);
  ScoreTotals totals;  // in position order: the sum one context's loop makes
  for (const ChunkScore& s : scores) {
    for (const double kl : s.kl) {
      ++totals.positions;
      totals.kl_sum += kl;
      totals.kl_max = std::max(totals.kl_max, kl);
    }
    totals.flips += s.flips;
  }
  return {totals.kl_mean(), totals.flip_rate()};
}

void PassRunner::score_chunk(const ScoredText& text, size_t c, const std::vector<float>& out,
                             analysis::ScoreScratch& scratch, ChunkScore& s) const {
  const auto& tokens = text.chunks[c];
  const size_t n_vocab = static_cast<size_t>(a_->info().n_vocab);
  if (!text.reference.empty()) {  // A's softmax and top-1 computed once: the same bits
    for (size_t p = 0; p + 1 < tokens.size(); ++p) {
      const std::span<const float> b(out.data() + p * n_vocab, n_vocab);
      s.kl.push_back(text.reference[c].kl_to(p, b));
      s.flips += text.top1_a[c][p] != analysis::top1(b);
    }
    return;
  }
  const PassRows rows{text.logits_a[c], out, n_vocab, tokens, 0};
  score_positions(rows, 0, static_cast<int>(tokens.size()) - 1, scratch,
                  [&](int, const analysis::PositionScore& p) {
                    s.kl.push_back(p.kl);
                    s.flips += top1_changed(p);
                  });
}

std::string PassRunner::prove_starts(const std::string& path, const ScoredText& text,
                                     const StartRows& kept) {
  if (bounds_.points.empty()) return "";
  std::fill(bounds_.start.begin(), bounds_.start.end(), -1);
  if (kept.chunks.empty()) {
    return fmt::format(
        "the start's rows ({:.1f} GB a text) are more than recommend keeps in "
        "memory",
        static_cast<double>(rows_bytes(text.chunks.size(), chunk_)) / 1e9);
  }
  const auto model = engine::model_load(path);
  engine::Arm arm(model, settings_of(path, threads_), chunk_);
  const auto& tokens = text.chunks.front();
  std::vector<float> own_logits;
  arm.run_chunk(tokens, nullptr, own_logits);
  // The start was scored on passes that kept its rows: they must give the unhooked pass's bits.
  if (!same_bits(own_logits, kept.logits0)) return "keeping the start's rows changes its logits";
  PrefixReuse reuse(arm, map_, bounds_.points);
  for (size_t k = 1; k < bounds_.points.size(); ++k) {
    bounds_.start[k] = reuse.start_for(static_cast<int>(k), kept.chunks.front(), own_logits,
                                       static_cast<int>(tokens.size()), 0);
  }
  return "";
}

}  // namespace hd::run
