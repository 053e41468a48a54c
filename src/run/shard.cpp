#include "run/shard.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "engine/threads.h"
#include "errors.h"
#include "store/experiment.h"

namespace hd::run {

// A whole decimal number in [lo, hi], or nullopt.
static std::optional<int> whole_number(const std::string& s, int lo, int hi) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const int v = std::stoi(s);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

Shard parse_shard(const std::string& spec) {
  const size_t slash = spec.find('/');
  const auto count = slash == std::string::npos
                         ? std::nullopt
                         : whole_number(spec.substr(slash + 1), 1, 100000);
  if (!count) {
    throw InputError("--shard '" + spec + "': give K/N, shard K of N (N from 1 to 100000)");
  }
  const auto index = whole_number(spec.substr(0, slash), 0, *count - 1);
  if (!index) {
    throw InputError("--shard '" + spec + "': K counts from 0 to " + std::to_string(*count - 1) +
                     " (as Slurm's SLURM_ARRAY_TASK_ID does)");
  }
  engine::use_every_allowed_cpu();  // a part's threads must not follow this machine's load
  return {*index, *count};
}

void store_shard(store::Experiment& e, const Shard& s) {
  e.set_meta("shard", nlohmann::json{{"index", s.index}, {"count", s.count}}.dump());
}

std::optional<Shard> stored_shard(const store::Experiment& e) {
  const auto text = e.meta("shard");
  if (!text) return std::nullopt;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  const auto number = [&](const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>()
                                                                          : int64_t{-1};
  };
  const int64_t index = number("index"), count = number("count");
  if (count < 1 || count > 100000 || index < 0 || index >= count) {
    throw InputError("'" + e.path() + "': its meta 'shard' is not a shard heterodyne writes");
  }
  engine::use_every_allowed_cpu();  // resumed, verified or merged: as the part was computed
  return Shard{static_cast<int>(index), static_cast<int>(count)};
}

bool part_needs_work(const std::string& path, const Shard& shard) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return true;
  if (store::Experiment::being_written(path)) {
    throw InputError("'" + path + "' is being written: shard " + shard.name() +
                     " still runs (squeue shows it); wait for it to end, or scancel it, and run "
                     "this command again");
  }
  const store::Experiment e = store::Experiment::open(path, false);
  const auto stored = stored_shard(e);
  if (!stored || stored->index != shard.index || stored->count != shard.count) {
    throw InputError("'" + path + "' is not shard " + shard.name() +
                     " of this run: remove it to run that shard again");
  }
  if (!e.sealed()) return true;
  if (e.integrity_verdict() != "ok") {
    throw InputError("'" + path + "' was changed after it was sealed (its rows no longer hash as "
                     "recorded): remove it to run shard " + shard.name() + " again");
  }
  return false;
}

nlohmann::json placement_facts() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json j = {{"host", host}};
  nlohmann::json slurm;
  for (const auto& [key, var] : {std::pair{"job_id", "SLURM_JOB_ID"},
                                 {"array_job_id", "SLURM_ARRAY_JOB_ID"},
                                 {"array_task_id", "SLURM_ARRAY_TASK_ID"},
                                 {"node", "SLURMD_NODENAME"},
                                 {"cluster", "SLURM_CLUSTER_NAME"}}) {
    if (const char* v = std::getenv(var)) slurm[key] = v;
  }
  if (!slurm.empty()) j["slurm"] = slurm;
  return j;
}

}  // namespace hd::run
