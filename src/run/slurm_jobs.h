// heterodyne slurm: the two batch scripts of a sharded run. A job array runs one shard per task
// (a part that exists is resumed, so resubmitting the array finishes what is missing), and a
// merge job, submitted with afterok on the array, joins the parts into the output. Pure text:
// cli/cmd_slurm.cpp writes and submits them.
#pragma once
#include <string>
#include <vector>

namespace hd::run {

struct SlurmPlan {
  std::string heterodyne;             // this binary, absolute: the nodes run the same build
  std::string command;                // "diff"
  std::vector<std::string> args;      // the command's own flags, as given (no -o, no --shard)
  int shards = 1;
  std::string out;                    // the merged file, absolute
  std::string workdir;                // where the command was given: relative paths start here
  std::vector<std::string> sbatch;    // "--partition=p", "--gres=gpu:1", … for every job
  std::vector<std::string> shard_only;  // for the shards alone (--gres: merge needs no GPU)
  bool force = false, allow_mixed_hosts = false;
};

// "<out>.parts": the parts, the scripts and the logs.
std::string parts_dir(const SlurmPlan& p);
// "<parts>/part-K-of-N.hdy"
std::string part_path(const SlurmPlan& p, int index);
std::string shards_script(const SlurmPlan& p);
std::string merge_script(const SlurmPlan& p);

}  // namespace hd::run
