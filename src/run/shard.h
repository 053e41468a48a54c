// A shard: one deterministic part of a chunked run, so that a cluster can run the parts at once
// and `heterodyne merge` can join them into the file one process would have written. Chunk c
// belongs to shard c mod N: every shard gets chunks from the whole text, and the parts of a
// run stay of one size whatever N is. The shard is not in the run's configuration (meta
// "config" is the whole run's, byte for byte), but in meta "shard" and in provenance.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace hd::store {
class Experiment;
}

namespace hd::run {

struct Shard {
  int index = 0;  // 0 … count-1: what Slurm's SLURM_ARRAY_TASK_ID counts
  int count = 1;
  bool owns(int chunk) const { return chunk % count == index; }
  // How many of a text's `n_chunks` chunks are this shard's.
  int chunks_of(int n_chunks) const {
    return n_chunks > index ? (n_chunks - index + count - 1) / count : 0;
  }
  std::string name() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "K/N" as --shard spells it; InputError naming what is wrong otherwise.
Shard parse_shard(const std::string& spec);

// Meta "shard": {"index", "count"}; a file without it is no shard (nullopt). InputError for a
// value no run writes.
void store_shard(store::Experiment& e, const Shard& s);
std::optional<Shard> stored_shard(const store::Experiment& e);

// Whether the part at `path` still has work: a missing file or a run not yet sealed does, a
// sealed part whose rows hash as recorded and whose meta says it is `shard` does not.
// InputError naming the file for one that is damaged, changed after it was sealed, or another
// shard's: a resubmission would fail on it, so it is said before anything is submitted.
bool part_needs_work(const std::string& path, const Shard& shard);

// Where this process runs, as a part's provenance records it: {host} and, inside a Slurm job,
// {slurm: {job_id, array_job_id, array_task_id, node, cluster}} from Slurm's variables.
nlohmann::json placement_facts();

}  // namespace hd::run
