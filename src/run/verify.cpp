#include "run/verify.h"

#include <fmt/format.h>

#include <array>

#include "analysis/compare.h"
#include "errors.h"
#include "run/floor.h"
#include "run/input.h"
#include "run/recommend.h"
#include "run/session.h"
#include "run/sweep.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::run {

namespace {

void check_integrity(const store::Experiment& e, store::Kind kind, const ProgressFn& progress) {
  const auto stored = e.meta("integrity_sha256");
  e.stored_config();  // "holds no run" for a file stopped before its configuration
  if (!stored) {
    throw InputError("'" + e.path() + "' is not complete: " + store::finish_hint(kind, e.path()) +
                     "; the integrity hash is written at the end");
  }
  const std::string now = e.compute_integrity();
  if (now != *stored) {
    throw RuntimeError("integrity check failed: the stored hash is " + stored->substr(0, 16) +
                       "…, the contents hash to " + now.substr(0, 16) +
                       "… (the file was modified)");
  }
  // With the rows' hash alone: what a merged file and the single-process run share
  // (run/merge.h).
  progress("integrity: ok (sha256 " + now + "; rows sha256 " + e.rows_sha256() + ")");
}

void diff_verify(const std::string& path, const VerifyOptions& options,
                 const ProgressFn& progress) {
  const store::Experiment e = store::Experiment::open(path, false);
  const auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_numerics(prov, options.force);
  const DiffConfig config = diff_config_from_json(nlohmann::json::parse(e.required_meta("config")));
  if (!options.input.empty()) {
    // A diff stores its tokens and needs no input; one given is still checked, not ignored.
    read_stored_input({config.text_file, config.token_ids}, prov, options.input,
                      "heterodyne verify " + path);
    progress(config.token_ids ? "tokens: the ids this run read (sha256 matches)"
                              : "text: the one this run read (sha256 matches)");
  }
  // A file from before B's floor, or before the floor's second split: without them.
  Session s(config, prov.contains("floor_ubatch_b"), prov.contains("floor_ubatch_2"));
  if (auto change = s.model_change(prov["arms"]); change && !options.force) {
    throw InputError(*change + " (--force to compare anyway)");
  }
  if (auto change = s.points_change(prov); change && !options.force) {
    throw InputError(*change + " (--force to compare anyway)");
  }
  if (auto change = s.floor_change(prov)) throw InputError(*change + ": it cannot be recomputed");
  const auto chunks = e.finished_chunks();
  // Each recomputed chunk is stored again, in memory, by the same code that wrote the file:
  // then every column of every row (the run time aside) is compared, not only those a
  // summary reads.
  store::Experiment again_stored = store::Experiment::in_memory();
  for (int c : chunks) {
    const analysis::ChunkResult stored = e.read_chunk(c);
    const analysis::ChunkResult again = s.compute(c, stored.tokens);
    if (auto m = analysis::first_mismatch(stored, again)) {
      throw RuntimeError("verify failed: " + *m);
    }
    again_stored.put_chunk(again, s.pieces_of(again));
    if (auto d = e.first_difference(c, again_stored)) throw RuntimeError("verify failed: " + *d);
    progress(Progress::chunk(c + 1, static_cast<int>(chunks.size()),
                             fmt::format("chunk {}/{}: identical", c + 1, chunks.size())));
  }
  progress(fmt::format("verify: all {} chunks reproduce bitwise", chunks.size()));
}

// How each kind of experiment is re-run (store/experiment_kind.h): indexed by store::Kind.
using Verifier = void (*)(const std::string&, const VerifyOptions&, const ProgressFn&);
constexpr std::array<Verifier, store::kKindCount> kVerifiers = {
    diff_verify,
    [](const std::string& path, const VerifyOptions& o, const ProgressFn& progress) {
      sweep_verify(path, o.force, progress, o.input);
    },
    [](const std::string& path, const VerifyOptions& o, const ProgressFn& progress) {
      floor_verify(path, o.force, progress, o.input);
    },
    [](const std::string& path, const VerifyOptions& o, const ProgressFn& progress) {
      if (!o.input.empty())
        throw InputError("a recommendation reads its texts from the files it names; verify "
                         "takes no input");
      recommend_verify(path, o.force, progress);
    },
};

}  // namespace

int verify(const std::string& path, const VerifyOptions& options, const ProgressFn& progress) {
  store::Kind kind;
  {
    const store::Experiment e = store::Experiment::open(path, false);
    kind = store::kind_of(e);
    check_integrity(e, kind, progress);
  }
  if (options.integrity_only) return 0;
  kVerifiers[static_cast<size_t>(kind)](path, options, progress);
  return 0;
}

}  // namespace hd::run
