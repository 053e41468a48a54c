// heterodyne verify: re-run a stored experiment and compare every stored number bitwise.
#pragma once
#include <string>

#include "run/diff.h"

namespace hd::run {

struct VerifyOptions {
  bool integrity_only = false;
  bool force = false;  // go on when a model hash or the llama.cpp commit differs
  // -f or --tokens: the input again (a path, "-" for standard input), checked against the
  // stored sha256. Sweeps and floors re-read their input; a run that read standard input needs
  // it given.
  InputPath input;
};

// Returns 0 when everything matches; throws RuntimeError naming the first mismatch, and
// InputError when the run cannot be reproduced here (without --force).
int verify(const std::string& path, const VerifyOptions& options, const ProgressFn& progress);

}  // namespace hd::run
