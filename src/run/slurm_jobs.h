// heterodyne slurm: the two batch scripts of a sharded run. A job array runs one shard per task
// (a part that exists is resumed, so resubmitting the array finishes what is missing), and a
// merge job, submitted with afterok on the array, joins the parts into the output. Pure text:
// cli/cmd_slurm.cpp writes and submits them.
#pragma once
#include <string>
#include <vector>

namespace hd::run {

// The most shards `heterodyne slurm` submits: their merge keeps a record of each part in its
// provenance, which must stay under what a reader takes from one field (store::kMaxFieldBytes).
inline constexpr int kMaxSlurmShards = 20000;

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

// One word of an #SBATCH line as sbatch 22.05 reads it back (src/sbatch/opt.c, _get_argument):
// in double quotes, with '\\' and '"' escaped by a backslash, so that white space of any kind
// (isspace: \v and \f too), '#' (a comment outside quotes) and quotes stay in the value.
// InputError naming `what` for what no line can carry: a line feed or carriage return (the
// line ends there), a NUL, or "hetjob"/"packjob" in any case (sbatch blanks those words and
// starts a heterogeneous job's next component at them).
std::string sbatch_word(const std::string& what, const std::string& value);
// A file name for --output: '%' doubled (Slurm expands %j, %a, … in it). A backslash would turn
// every replacement off (shard-%a.log would be one log for all), so it is refused.
std::string slurm_file_pattern(const std::string& what, const std::string& path);

// What makes the run: a script without the #SBATCH lines of its header (scheduling: time,
// partition, gres, the user's sbatch options, the array's range). Two scripts of one run have
// the same. --cpus-per-task is scheduling that changes the default thread count, so the
// shards' script also says it in a comment of its body: another value is another run.
std::string run_lines(const std::string& script);

// "<out>.parts": the parts, the scripts and the logs.
std::string parts_dir(const SlurmPlan& p);
// "<parts>/part-K-of-N.hdy"
std::string part_path(const SlurmPlan& p, int index);
// InputError when a value of the plan cannot stand in a script (sbatch_word's rules).
std::string shards_script(const SlurmPlan& p);
std::string merge_script(const SlurmPlan& p);

}  // namespace hd::run
