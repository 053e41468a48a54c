// heterodyne merge: the parts of a sharded run (run/shard.h) joined into the one experiment a
// single process would have written, row for row. The parts must fit: every shard of one N
// there once and complete, untouched since sealed, of one configuration and input, made with
// the same models, heterodyne and llama.cpp builds, and on hosts whose numbers agree (the same
// CPU and features, the same threads and devices) unless allowed. The merged file's summaries
// are what show and report compute from its rows, as for any run; it is sealed anew.
#pragma once
#include <string>
#include <vector>

#include "common/progress.h"

namespace hd::run {

struct MergeRequest {
  std::vector<std::string> parts;
  std::string out;
  bool replace = false;            // --force
  bool allow_mixed_hosts = false;  // --allow-mixed-hosts: recorded in the merged provenance
  std::string command_line;
};

struct MergeResult {
  int parts = 0, chunks = 0;
  std::string rows_sha256;          // Experiment::rows_sha256 of the merged file
  std::vector<std::string> mixed;   // how the hosts differed, when allowed
};

// InputError naming the first part (and what of it) that does not fit.
MergeResult merge_parts(const MergeRequest& request, const ProgressFn& progress);

}  // namespace hd::run
