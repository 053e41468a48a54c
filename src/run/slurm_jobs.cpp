#include "run/slurm_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "common/shell_quote.h"
#include "errors.h"

namespace hd::run {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A value that will also stand in the script's comments and shell lines: one line.
void require_one_line(const std::string& what, const std::string& value) {
  if (value.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    throw InputError(what + " '" + value.substr(0, value.find_first_of("\n\r")) +
                     "…' holds a line break or a NUL byte, which a batch script cannot carry");
  }
}

}  // namespace

std::string sbatch_word(const std::string& what, const std::string& value) {
  require_one_line(what, value);
  const std::string l = lower(value);
  for (const char* word : {"hetjob", "packjob"}) {
    if (l.find(word) != std::string::npos) {
      throw InputError(what + " '" + value + "' holds '" + word +
                       "', which sbatch takes in an #SBATCH line as the start of another "
                       "component of a heterogeneous job");
    }
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string slurm_file_pattern(const std::string& what, const std::string& path) {
  if (path.find('\\') != std::string::npos) {
    throw InputError(what + " '" + path + "' holds a backslash: Slurm then expands no %a in a "
                     "log file's name, and every shard would write one log");
  }
  std::string out;
  for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

std::string run_lines(const std::string& script) {
  std::istringstream in(script);
  std::string out;
  bool header = true;  // sbatch reads #SBATCH lines only before the first command
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') header = false;
    if (!header || line.rfind("#SBATCH", 0) != 0) out += line + "\n";
  }
  return out;
}

std::string parts_dir(const SlurmPlan& p) { return p.out + ".parts"; }

std::string part_path(const SlurmPlan& p, int index) {
  return fmt::format("{}/part-{}-of-{}.hdy", parts_dir(p), index, p.shards);
}

// The header every job shares: a name, where it runs and logs, the user's sbatch options.
static std::string header(const SlurmPlan& p, const std::string& name, const std::string& log,
                          bool shard) {
  const auto line = [](const std::string& what, const std::string& option) {
    return "#SBATCH " + sbatch_word(what, option) + "\n";
  };
  require_one_line("the output path", p.out);
  std::string s = "#!/bin/bash\n";
  s += "# Written by heterodyne slurm for " + p.out + " (docs/cluster.md).\n";
  s += line("the output's name (the jobs' name)", "--job-name=" + name);
  s += line("the working folder", "--chdir=" + p.workdir);
  s += line("the output path",
            "--output=" + slurm_file_pattern("the output path", parts_dir(p)) + "/logs/" + log);
  s += "#SBATCH --open-mode=append\n";  // a resubmission's log follows the last one's
  for (const auto& o : p.sbatch) s += line("the sbatch option", o);
  if (shard) {
    for (const auto& o : p.shard_only) s += line("the sbatch option", o);
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
  // The CPUs a task gets set its default thread count (engine::default_threads): they are part
  // of the run, not its scheduling, and this line makes them so for run_lines.
  for (const auto& o : p.shard_only) {
    if (o.rfind("--cpus-per-task=", 0) == 0) s += "# every task runs with " + o + "\n";
  }
  s += "set -eu\n";
  s += fmt::format("part={}/part-$SLURM_ARRAY_TASK_ID-of-{}.hdy\n", shell_quote(parts_dir(p)),
                   p.shards);
  require_one_line("heterodyne's path", p.heterodyne);
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
