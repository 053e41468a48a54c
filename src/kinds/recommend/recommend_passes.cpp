#include "kinds/recommend/recommend_passes.h"

#include <algorithm>
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

// A start's rows are kept in memory for its round; past this they are not, and every variant
// runs from the tokens (the same numbers, more time).
constexpr uint64_t kMaxStartRowBytes = 2ull << 30;  // per text

// One chunk's scores: per position the KL (summed later in position order) and the flips.
struct ChunkScore {
  std::vector<double> kl;
  int64_t flips = 0;
};

// Runs fn(worker, chunk) for every chunk, chunk c on worker c mod workers, each worker on its
// own thread; the first exception is rethrown once all have stopped.
template <typename Fn>
void on_workers(int workers, size_t chunks, Fn&& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  std::vector<std::thread> pool;
  auto work = [&](int w) {
    try {
      for (size_t c = static_cast<size_t>(w); c < chunks; c += static_cast<size_t>(workers))
        fn(w, c);
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

int first_changed_layer(const std::vector<std::string>& tensors, int n_layer) {
  int first = n_layer;
  for (const std::string& t : tensors) {
    int layer = -1;
    if (t == "output.weight") {
      layer = n_layer;
    } else if (t.rfind("blk.", 0) == 0) {
      const size_t dot = t.find('.', 4);
      const std::string digits = t.substr(4, dot == std::string::npos ? 0 : dot - 4);
      if (!digits.empty() && std::all_of(digits.begin(), digits.end(), ::isdigit) &&
          digits.size() < 6)
        layer = std::stoi(digits);
    }
    if (layer < 0 || layer > n_layer) return 0;  // not a layer's: the whole pass
    first = std::min(first, layer);
  }
  return first;
}

PassRunner::PassRunner(const std::shared_ptr<engine::Model>& a, int chunk, bool reuse)
    : a_(a), chunk_(chunk) {
  // As many contexts as threads, one thread each where there are as many chunks: a small
  // model's layers are too short for threads to share well (measured: docs/recommend.md).
  threads_ = std::max(1, engine::default_threads());
  const int n_layer = a->info().n_layer;
  if (!reuse) {
    bounds_.why_not = "--no-reuse";
    return;
  }
  if (!prefix_reuse_applies(a->info().architecture)) {
    bounds_.why_not = "the " + a->info().architecture +
                      " architecture's passes are not proven to start mid-graph";
    return;
  }
  map_ = engine::survey_points(a);
  if (!map_.transplants()) {
    bounds_.why_not = map_.no_transplants;
    return;
  }
  bounds_.points.push_back(map_.name(engine::Role::kEmbedding));
  for (int l = 0; l < n_layer; ++l) bounds_.points.push_back(map_.name(engine::Role::kResidual, l));
  bounds_.start.assign(bounds_.points.size(), -1);
}

uint64_t PassRunner::rows_bytes(size_t chunks, int n) const {
  if (bounds_.points.empty()) return 0;
  return static_cast<uint64_t>(chunks) * static_cast<uint64_t>(n) *
         static_cast<uint64_t>(a_->info().n_embd) * sizeof(float) *
         static_cast<uint64_t>(bounds_.points.size() - 1);  // the embedding is never a start
}

int PassRunner::start_for_layer(int layer) const {
  if (bounds_.points.empty() || layer <= 0) return -1;
  return bounds_.start[std::min(static_cast<size_t>(layer), bounds_.points.size() - 1)];
}

TextScore PassRunner::score(const std::string& path, const ScoredText& text, StartRows* keep,
                            const StartRows* from, int k) const {
  const auto model = engine::model_load(path);
  const size_t n_chunks = text.chunks.size();
  const int workers = std::max(1, std::min<int>(threads_, static_cast<int>(n_chunks)));
  std::vector<std::unique_ptr<engine::Arm>> arms;
  for (int w = 0; w < workers; ++w) {
    arms.push_back(
        std::make_unique<engine::Arm>(model, settings_of(path, threads_ / workers), chunk_));
  }
  const bool keeping = keep && !bounds_.points.empty() &&
                       rows_bytes(n_chunks, chunk_) <= kMaxStartRowBytes;
  if (keep) keep->chunks.assign(keeping ? n_chunks : 0, engine::Hook{});
  const bool starting = from && k > 0 && from->chunks.size() == n_chunks;
  const size_t n_vocab = static_cast<size_t>(a_->info().n_vocab);
  std::vector<ChunkScore> scores(n_chunks);
  std::vector<std::vector<float>> logits(static_cast<size_t>(workers));
  std::vector<analysis::ScoreScratch> scratch(static_cast<size_t>(workers));
  on_workers(workers, n_chunks, [&](int w, size_t c) {
    const auto& tokens = text.chunks[c];
    engine::Arm& arm = *arms[static_cast<size_t>(w)];
    auto& out = logits[static_cast<size_t>(w)];
    if (starting) {
      const std::string& point = bounds_.points[static_cast<size_t>(k)];
      arm.run_from(point, from->chunks[c].captured(point), static_cast<int>(tokens.size()),
                   nullptr, out);
    } else if (keeping) {
      engine::Hook& h = keep->chunks[c];
      engine::tell_rows(map_, h);
      for (size_t p = 1; p < bounds_.points.size(); ++p) h.capture(bounds_.points[p]);
      arm.run_chunk(tokens, &h, out);
    } else {
      arm.run_chunk(tokens, nullptr, out);
    }
    const PassRows rows{text.logits_a[c], out, n_vocab, tokens, 0};
    ChunkScore& s = scores[c];
    score_positions(rows, 0, static_cast<int>(tokens.size()) - 1,
                    scratch[static_cast<size_t>(w)], [&](int, const analysis::PositionScore& p) {
                      s.kl.push_back(p.kl);
                      s.flips += top1_changed(p);
                    });
  });
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

void PassRunner::prove_starts(const std::string& path, const ScoredText& text,
                              const StartRows& kept) {
  if (bounds_.points.empty()) return;
  std::fill(bounds_.start.begin(), bounds_.start.end(), -1);
  if (kept.chunks.empty()) return;  // rows too large to keep: every pass from the tokens
  const auto model = engine::model_load(path);
  engine::Arm arm(model, settings_of(path, engine::default_threads()), chunk_);
  const auto& tokens = text.chunks.front();
  std::vector<float> own_logits;
  arm.run_chunk(tokens, nullptr, own_logits);
  PrefixReuse reuse(arm, map_, bounds_.points);
  for (size_t k = 1; k < bounds_.points.size(); ++k) {
    bounds_.start[k] = reuse.start_for(static_cast<int>(k), kept.chunks.front(), own_logits,
                                       static_cast<int>(tokens.size()), 0);
  }
}

}  // namespace hd::run
