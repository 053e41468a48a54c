// heterodyne verify: what every kind's re-run shares (kinds/kind.h verify re-runs it).
#pragma once
#include <string>

#include "common/progress.h"
#include "run/input.h"

namespace hd::store {
class Experiment;
}

namespace hd::run {

struct VerifyOptions {
  bool integrity_only = false;
  bool force = false;  // go on when a model hash or the llama.cpp commit differs
  // -f or --tokens: the input again (a path, "-" for standard input), checked against the
  // stored sha256. Sweeps and floors re-read their input; a run that read standard input needs
  // it given.
  InputPath input;
};

// The file is complete and its contents hash as sealed: InputError for a file whose run has
// not finished, RuntimeError for one changed since.
void check_integrity(const store::Experiment& e, const ProgressFn& progress);

}  // namespace hd::run
