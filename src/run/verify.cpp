#include "run/verify.h"

#include "errors.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::run {

void check_integrity(const store::Experiment& e, const ProgressFn& progress) {
  const auto stored = e.meta("integrity_sha256");
  e.stored_config();  // "holds no run" for a file stopped before its configuration
  if (!stored) {
    throw InputError("'" + e.path() + "' is not complete: " + store::finish_hint(e) +
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
  progress(Progress::result("integrity: ok (sha256 " + now + "; rows sha256 " + e.rows_sha256() + ")"));
}

}  // namespace hd::run
