#include "run/chunk_loop.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/fatal.h"
#include "errors.h"
#include "store/experiment.h"

namespace hd::run {


std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

static std::string nothing_stored(const store::Experiment& e) {
  return "nothing was stored ('" + e.path() + "' is as it was)";
}

static std::string kept_chunks(const store::Experiment& e, const ChunkLoop& loop, size_t n) {
  return "the " + std::to_string(n) + " " + loop.unit + "s already stored are kept: finish with " +
         "heterodyne " + loop.command + " --resume " + e.path();
}

// How many of the loop's units it computes: all, or a shard's.
static int owned(const ChunkLoop& loop) {
  int n = 0;
  for (int c = 0; c < loop.total; ++c) n += !loop.owns || loop.owns(c);
  return n;
}

// Runs every missing chunk; returns how many are still missing (after a stop).
static int run_missing(store::Experiment& e, const ChunkLoop& loop, const ProgressFn& progress,
                       int& finished) {
  const int total = owned(loop);
  const auto start = std::chrono::steady_clock::now();
  TimeLeft time_left;
  for (int c = 0; c < loop.total; ++c) {
    if (loop.done.count(c) || (loop.owns && !loop.owns(c))) continue;
    if (stop_requested()) break;
    const ChunkDone d = loop.run_chunk(c, finished);
    time_left.unit_done(d.seconds);
    e.publish();  // the file appears (or replaces the old one) with its first chunk
    ++finished;
    fatal::set_resume_hint(kept_chunks(e, loop, static_cast<size_t>(finished)));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = time_left.left(total - finished);
    // Elapsed, and what is left at the mean of the last chunks (not the last one alone).
    const std::string timing = finished < total
                                   ? fmt::format("{} elapsed, about {} left", duration_text(elapsed),
                                                 duration_text(left))
                                   : fmt::format("{} elapsed", duration_text(elapsed));
    Progress p = Progress::chunk(
        finished, total,
        std::isnan(d.mean_kl)
            ? fmt::format("{} {}/{}  {:.2f} s  ({})", loop.unit, finished, total, d.seconds, timing)
            : fmt::format("{} {}/{}  mean KL {:.6f}  {:.2f} s  ({})", loop.unit, finished, total,
                          d.mean_kl, d.seconds, timing));
    p.mean_kl = d.mean_kl;
    p.seconds = d.seconds;
    p.seconds_elapsed = elapsed;
    p.seconds_left = left;
    progress(p);
  }
  const int missing = total - finished;
  if (missing == 0) {
    if (loop.before_seal) loop.before_seal();
    auto prov = nlohmann::json::parse(e.meta("provenance").value_or("{}"));
    prov["finished_at"] = now_utc();
    e.set_meta("provenance", prov.dump());
    e.seal();
    e.publish();  // a run with nothing left to compute is published here
  }
  return missing;
}

RunEnd run_chunk_loop(store::Experiment& e, const ChunkLoop& loop, const ProgressFn& progress) {
  // A stored chunk the text no longer has (a tokenizer that changed under the same file hash)
  // would be counted as done and the run never sealed: refuse it.
  if (!loop.done.empty() && (*loop.done.begin() < 0 || *loop.done.rbegin() >= loop.total)) {
    throw InputError("'" + e.path() + "' holds " + loop.unit + " " +
                     std::to_string(*loop.done.rbegin()) + " but the text gives " +
                     std::to_string(loop.total) + " " + loop.unit +
                     "s now: the tokenization changed since the run started");
  }
  for (int c : loop.done) {
    if (loop.owns && !loop.owns(c)) {
      throw InputError("'" + e.path() + "' holds " + loop.unit + " " + std::to_string(c) +
                       ", which is not its shard's: rows no run of it writes");
    }
  }
  fatal::set_resume_hint(e.published() ? kept_chunks(e, loop, loop.done.size())
                                       : nothing_stored(e));
  int finished = static_cast<int>(loop.done.size());
  try {
    const int missing = run_missing(e, loop, progress, finished);
    fatal::set_resume_hint("");
    return {missing, e.published(), loop.unit};
  } catch (const RuntimeError& err) {
    fatal::set_resume_hint("");
    if (!e.published()) throw RuntimeError(std::string(err.what()) + "; " + nothing_stored(e));
    throw RuntimeError(std::string(err.what()) + "; " +
                       kept_chunks(e, loop, static_cast<size_t>(finished)));
  }
}

}  // namespace hd::run
