#include "kinds/sweep/sweep_kind.h"

#include "errors.h"
#include "kinds/sweep/sweep_view.h"
#include "store/experiment.h"

namespace hd::kinds {

void SweepKind::print(std::ostream& out, const report::LoadedResult& l) const { report::print_sweep(out, l); }

void SweepKind::verify(const std::string& path, const run::VerifyOptions& options,
                      const ProgressFn& progress) const {
  run::sweep_verify(path, options.force, progress, options.input);
}

// A sweep's parts hash each chunk's rows under sweep_rows_sha256/N and keep a summary of their
// own chunks (meta "sweep"); the merged file computes the run's from every chunk.
const run::Sharding* SweepKind::sharding() const {
  static const run::Sharding s{
      "sweep_rows_sha256/", {std::string(kSweepKind)}, nullptr,
      [](store::Experiment& merged, int n_chunks) -> std::optional<std::string> {
        for (int c = 0; c < n_chunks; ++c) {
          if (auto altered = merged.sweep_chunk_altered(c)) return altered;
        }
        run::store_sweep_summary(merged);  // of every chunk, as one process computes it
        return std::nullopt;
      }};
  return &s;
}

std::unique_ptr<const RunKind> make_sweep_kind() { return std::make_unique<SweepKind>(); }

}  // namespace hd::kinds
