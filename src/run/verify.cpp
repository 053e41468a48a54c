#include "run/verify.h"

#include <fmt/format.h>

#include "analysis/compare.h"
#include "errors.h"
#include "run/floor.h"
#include "run/session.h"
#include "run/sweep.h"
#include "run/text.h"
#include "store/experiment.h"

namespace hd::run {

static void check_integrity(const store::Experiment& e, const ProgressFn& progress) {
  const auto stored = e.meta("integrity_sha256");
  e.stored_config();  // "holds no run" for a file stopped before its configuration
  if (!stored) {
    const std::string kind = e.meta("kind").value_or("diff");
    if (kind == "sweep" || kind == "floor") {
      throw InputError("'" + e.path() + "' is an unfinished " + kind + ": finish it with " + kind +
                       " --resume; the integrity hash is written at the end");
    }
    throw InputError(
        "'" + e.path() + "' is not complete (" + std::to_string(e.finished_chunks().size()) +
        " chunks stored): finish it with diff --resume; the integrity hash is written at the end");
  }
  const std::string now = e.compute_integrity();
  if (now != *stored) {
    throw RuntimeError("integrity check failed: the stored hash is " + stored->substr(0, 16) +
                       "…, the contents hash to " + now.substr(0, 16) +
                       "… (the file was modified)");
  }
  progress("integrity: ok (sha256 " + now + ")");
}

int verify(const std::string& path, const VerifyOptions& options, const ProgressFn& progress) {
  const store::Experiment e = store::Experiment::open(path, false);
  check_integrity(e, progress);
  if (options.integrity_only) return 0;
  const std::string kind = e.meta("kind").value_or("diff");
  if (kind == "sweep") {
    sweep_verify(path, options.force, progress, options.text);
    return 0;
  }
  if (kind == "floor") {
    floor_verify(path, options.force, progress, options.text);
    return 0;
  }

  const auto prov = nlohmann::json::parse(e.required_meta("provenance"));
  require_same_llama_commit(prov, options.force);
  const DiffConfig config = diff_config_from_json(nlohmann::json::parse(e.required_meta("config")));
  if (!options.text.empty()) {
    // A diff stores its tokens and needs no text; one given is still checked, not ignored.
    read_stored_text(config.text_file, prov, options.text, "heterodyne verify " + path);
    progress("text: the one this run read (sha256 matches)");
  }
  Session s(config);
  if (auto change = s.model_change(prov["arms"]); change && !options.force) {
    throw InputError(*change + " (--force to compare anyway)");
  }
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
  return 0;
}

}  // namespace hd::run
