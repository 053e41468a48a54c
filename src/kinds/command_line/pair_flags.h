// The flags of the commands that run two arms on one text (diff, sweep), registered once: the
// models, B made from A, the text and its chunks, the arm settings, the floor arm.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "kinds/command_line/arm_flags.h"
#include "kinds/command_line/command_line.h"
#include "run/config.h"
#include "run/shard.h"

namespace hd::cli {

struct PairFlags {
  // Without --b, B is A's model with B's settings (sweep); otherwise (diff) one of --b and
  // --b-quant is needed. Set before add_pair_flags: the help says which.
  bool b_defaults_to_a = false;
  std::string a, b, b_quant;
  InputFlags input;  // --text-file or --tokens
  ArmFlags shared, own_a, own_b;
  bool no_floor = false;
};

// Registers them, with the chunking and --skip-unencodable into `cfg`: groups "Inputs", the
// arms' ("Arms: both", "Arm A only", "Arm B only") and the floor's flags under "Analyses".
void add_pair_flags(CLI::App& cmd, PairFlags& f, run::DiffConfig& cfg);

// `cfg` with the arms, B's quantization, the input and the floor the flags give.
run::DiffConfig pair_config(const std::string& command, const PairFlags& f, run::DiffConfig cfg);

// --shard K/N under "Cluster" (diff, sweep: docs/cluster.md), and the shard it gives (none
// when not given; InputError for a spec that is not one).
void add_shard_flag(CLI::App& cmd, std::string& spec);
std::optional<run::Shard> shard_of(const std::string& spec);

// heterodyne slurm's check of a command's flags before it submits (Context::plan_only): what a
// new run of `command` needs, the configuration validated; nothing runs.
void check_plan(const std::string& command, const PairFlags& f, const run::DiffConfig& cfg,
                const std::string& resume);

}  // namespace hd::cli
