// heterodyne merge: the parts of a sharded run (run/shard.h) joined into the one experiment a
// single process would have written, row for row. The parts must fit: every shard of one N
// there once and complete, untouched since sealed, of one configuration and input, made with
// the same models, heterodyne and llama.cpp builds, and on hosts whose numbers agree (the same
// CPU and features, the same threads and devices) unless allowed. The merged file's summaries
// are what show and report compute from its rows, as for any run; it is sealed anew.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"

namespace hd::store {
class Experiment;
}

namespace hd::run {

// How the parts of a kind's sharded run join (kinds/kind.h sharding()): which meta keys hold a
// chunk's hash, which meta a part has of its own (not the run's), which chunks a part holds,
// and what the merged file checks and computes once every part's rows are in.
struct Sharding {
  std::string chunk_hash_prefix;      // "chunk_sha256/"
  std::vector<std::string> own_meta;  // besides every kind's (shard, provenance, status, …)
  std::vector<int> (*stored_chunks)(const store::Experiment& e,
                                    const std::map<std::string, std::string>& meta) = nullptr;
  // After the rows are copied: a chunk whose rows no longer hash as its part recorded, or
  // nothing; then the merged summaries a single process would have stored.
  std::optional<std::string> (*finish)(store::Experiment& merged, int n_chunks) = nullptr;
};

struct MergeRequest {
  std::vector<std::string> parts;
  std::string out;
  bool replace = false;            // --force
  bool allow_mixed_hosts = false;  // --allow-mixed-hosts: recorded in the merged provenance
  std::string command_line;
  // The sharding of the kind named (a part's meta "kind"); nullptr for a kind that does not
  // shard.
  std::function<const Sharding*(const std::string& kind)> sharding_of;
};

struct MergeResult {
  int parts = 0, chunks = 0;
  std::string rows_sha256;          // Experiment::rows_sha256 of the merged file
  std::vector<std::string> mixed;   // how the hosts differed, when allowed
};

// InputError naming the first part (and what of it) that does not fit.
MergeResult merge_parts(const MergeRequest& request, const ProgressFn& progress);

}  // namespace hd::run
