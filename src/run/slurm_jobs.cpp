#include "run/slurm_jobs.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/shell_quote.h"

namespace hd::run {

std::string parts_dir(const SlurmPlan& p) { return p.out + ".parts"; }

std::string part_path(const SlurmPlan& p, int index) {
  return fmt::format("{}/part-{}-of-{}.hdy", parts_dir(p), index, p.shards);
}

// The header every job shares: a name, where it runs and logs, the user's sbatch options.
static std::string header(const SlurmPlan& p, const std::string& name, const std::string& log,
                          bool shard) {
  std::string s = "#!/bin/bash\n";
  s += "# Written by heterodyne slurm for " + p.out + " (docs/cluster.md).\n";
  s += "#SBATCH --job-name=" + name + "\n";
  s += "#SBATCH --chdir=" + p.workdir + "\n";
  s += "#SBATCH --output=" + parts_dir(p) + "/logs/" + log + "\n";
  s += "#SBATCH --open-mode=append\n";  // a resubmission's log follows the last one's
  for (const auto& o : p.sbatch) s += "#SBATCH " + o + "\n";
  if (shard) {
    for (const auto& o : p.shard_only) s += "#SBATCH " + o + "\n";
  }
  return s;
}

static std::string job_name(const SlurmPlan& p) {
  return "heterodyne-" + p.command + "-" + std::filesystem::path(p.out).stem().string();
}

std::string shards_script(const SlurmPlan& p) {
  std::string s = header(p, job_name(p), "shard-%a.log", true);
  s += fmt::format("#SBATCH --array=0-{}\n", p.shards - 1);
  s += "# Task K runs shard K of " + std::to_string(p.shards) +
       " (chunk c where c mod N = K). A part that exists is resumed:\n"
       "# resubmitting this script finishes what a killed or cancelled task left.\n";
  s += "set -eu\n";
  s += fmt::format("part={}/part-$SLURM_ARRAY_TASK_ID-of-{}.hdy\n", shell_quote(parts_dir(p)),
                   p.shards);
  const std::string hd = shell_quote(p.heterodyne);
  s += "if [ -e \"$part\" ]; then\n";
  s += fmt::format("  exec {} {} --resume \"$part\"\n", hd, p.command);
  s += "fi\n";
  s += fmt::format("exec {} {}", hd, p.command);
  for (const auto& a : p.args) s += fmt::format(" {}", shell_quote(a));
  s += fmt::format(" --shard \"$SLURM_ARRAY_TASK_ID/{}\" -o \"$part\"\n", p.shards);
  return s;
}

std::string merge_script(const SlurmPlan& p) {
  std::string s = header(p, job_name(p) + "-merge", "merge.log", false);
  s += "# Runs once every task of the shards' array has succeeded (afterok).\n";
  s += fmt::format("exec {} merge", shell_quote(p.heterodyne));
  for (int i = 0; i < p.shards; ++i) s += fmt::format(" \\\n  {}", shell_quote(part_path(p, i)));
  s += fmt::format(" \\\n  -o {}", shell_quote(p.out));
  if (p.force) s += " --force";
  if (p.allow_mixed_hosts) s += " --allow-mixed-hosts";
  return s + "\n";
}

}  // namespace hd::run
