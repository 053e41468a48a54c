// verify of a diff: every stored chunk computed again and stored again in memory, then compared
// row by row, column by column, with the file's.
#include <fmt/format.h>

#include "analysis/compare.h"
#include "errors.h"
#include "kinds/diff/diff_kind.h"
#include "run/config.h"
#include "run/input.h"
#include "run/provenance.h"
#include "run/session.h"
#include "store/experiment.h"

namespace hd::kinds {

using namespace run;

void DiffKind::verify(const std::string& path, const run::VerifyOptions& options,
                      const ProgressFn& progress) const {
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
  Session s(config);
  if (auto change = s.model_change(prov["arms"]); change && !options.force) {
    throw InputError(*change + " (--force to compare anyway)");
  }
  if (auto change = s.points_change(prov); change && !options.force) {
    throw InputError(*change + " (--force to compare anyway)");
  }
  if (auto change = s.floor_change(prov)) throw InputError(*change + ": it cannot be recomputed");
  if (const auto sample = run::stored_floor_sample(prov)) s.measure_floor_on(*sample);
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
  progress(Progress::result(fmt::format("verify: all {} chunks reproduce bitwise", chunks.size())));
}

}  // namespace hd::kinds
