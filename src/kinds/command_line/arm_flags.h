// Arm settings as flags, from engine's field table (engine/arm_settings.h): the same spellings
// as llama.cpp (-ctk -ctv -fa -ub -t -dev -ngl --rpc) apply to both arms, and --a-… / --b-…
// override them for one arm.
#pragma once
#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/arm.h"

namespace hd::cli {

// The arm settings given on the command line, by one prefix.
struct ArmFlags {
  engine::ArmSettings values;   // the given settings' values (the others are unused)
  std::set<std::string> given;  // kArmFields keys of the settings given
  std::string prefix;           // "", "a-" or "b-": how the flags are spelled, for messages
  bool server = false;          // --server: llama-server's defaults, under any flag given
};

// Registers every arm setting of engine's field table (kArmFields) as a flag, in the CLI11
// group "Arms": the shared flags (prefix "", both arms) or one arm's overrides ("a-", "b-").
void add_arm_flags(CLI::App& cmd, ArmFlags& flags, const std::string& prefix);
// Whether `opt` (of the shared arm flags) sets how llama-server holds the text: --server and
// the fields marked `server` (engine/arm_settings.h).
bool is_server_flag(const CLI::Option& opt);
// The shared flags of a command with one arm (capture, check, floor), but those in `skip`
// (floor sweeps -ub, -t and -fa as lists of its own).
void add_single_arm_flags(CLI::App& cmd, ArmFlags& flags, const std::set<std::string>& skip = {});

// The shared values, overridden by the arm's own, over llama.cpp's defaults (over llama-server's
// where --server, --a-server or --b-server is given). InputError for a
// value a field refuses (-t 0, a list with an empty entry); device names are lower-cased.
engine::ArmSettings resolve_arm(const std::string& model, const ArmFlags& shared,
                                const ArmFlags& own);

// "a,b" -> {"a", "b"}; empty entries are kept (",": two), for the caller to refuse by name.
std::vector<std::string> split_list(const std::string& list);

// How a run reads its text, as diff and sweep spell it: --chunk, --max-chunks, --score-from.
void add_chunk_flags(CLI::App& cmd, int& chunk, int& max_chunks, std::string& score_from);

// A path as a run stores it: absolute and normalized, so resume and verify may run from another
// directory. "" and "-" (standard input, which readers refuse by name) are kept as they are.
std::string stored_path(const std::string& path);

// A validator for real-valued flags: a finite number above `lo` (at least `lo` when
// `lo_allowed`). CLI11's own range checks let "nan" through (no comparison with NaN is true).
CLI::Validator finite_number(double lo, bool lo_allowed);

// llama.cpp spells some flags with one dash and several letters (-ctk); CLI11 wants those as
// long options. Rewrites argv in place of the copy it returns.
std::vector<std::string> normalize_llama_flags(int argc, char** argv);
// Every arm setting's short spelling of several letters, as llama.cpp users type it: -ctk -ctv
// -fa -ub -dev -ngl (CLI11 knows them as --ctk …; help_format.h lists them with one dash).
const std::set<std::string>& llama_single_dash_flags();

}  // namespace hd::cli
