// The pieces every command is built from: its context, the flag groups of --help, input and
// output flags, --resume, and the last line of a chunked run. Kinds (src/kinds/<name>/) build
// their commands from these; cli/ builds the others.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "common/progress.h"
#include "run/chunk_loop.h"
#include "run/input.h"

namespace hd::cli {

struct Context {
  std::string command_line;  // the whole invocation, shell-quoted, for provenance
  int exit_code = 0;
  // Parse and check a command's flags, run nothing (heterodyne slurm, before it submits).
  bool plan_only = false;
};

// Progress lines go to stderr, so stdout stays clean for tables and JSON; with
// HETERODYNE_PROGRESS=json each is one JSON object (common/progress.h).
void progress_line(const Progress& p);

// The last line of a chunked run (diff, sweep): written, stopped with chunks to go (and how to
// finish), or stopped before anything was stored. Returns the exit code (0, or 130 stopped).
int report_run_end(const run::RunEnd& end, const std::string& command, const std::string& path);

// `cmd --resume FILE` (no other flag but -f) or a new run into `out`, which first needs every
// flag in `needed` ({given, "--a MODEL.gguf"}: "diff needs --a MODEL.gguf"). Returns the exit code.
struct ResumableRun {
  std::string resume, out;
  std::vector<std::pair<bool, std::string>> needed;
  std::function<run::RunEnd()> resume_run, new_run;
  // What every run over two arms and an input needs: --a, --text-file or --tokens, and -o.
  static ResumableRun of_arms(const std::string& resume, const std::string& out,
                              const std::string& a, const run::InputPath& input) {
    return {resume, out,
            {{!a.empty(), "--a MODEL.gguf"}, {!input.empty(), kInputNeeded},
             {!out.empty(), "-o FILE.hdy"}},
            {}, {}};
  }
  static constexpr const char* kInputNeeded = "--text-file FILE or --tokens FILE";
};
int run_or_resume(const CLI::App& cmd, const ResumableRun& r);

// --help lists a command's flags under headings ("Inputs", "Arms: both", "Analyses", "Output",
// …), in the order they are first used. Every option `add` registers on `cmd` goes under
// `heading` (add_arm_flags and add_chunk_flags register several).
void in_group(CLI::App& cmd, const std::string& heading, const std::function<void()>& add);

// The arm flags of a two-arm command under their headings: shared, then A's and B's own.
struct ArmFlags;
void add_two_arm_flags(CLI::App& cmd, ArmFlags& shared, ArmFlags& own_a, ArmFlags& own_b);

// --text-file,-f and --tokens: the two ways a command is given its input (run/input.h).
struct InputFlags {
  std::string text, tokens;
  // The input given (an empty path when neither flag is); InputError naming both when both are.
  run::InputPath given(const std::string& command) const;
  // The same, InputError "<command> needs --text-file FILE or --tokens FILE" when neither is.
  run::InputPath required(const std::string& command) const;
};
// Registers both under the current heading: `text_help` says what the text is, `tokens_note`
// is added to --tokens' help (kChunkedTokensNote for the commands that cut chunks).
void add_input_flags(CLI::App& cmd, InputFlags& f, const std::string& text_help,
                     const std::string& tokens_note = "");
extern const char* const kChunkedTokensNote;

// --skip-unencodable, as every command that reads a text spells it.
CLI::Option* add_skip_unencodable(CLI::App& cmd, bool& skip);

// -o, --force (group "Output") and --resume (group "Resume") of a resumable command.
void add_output_and_resume(CLI::App& cmd, std::string& out, bool& force, std::string& resume);

// With --resume (diff, sweep, floor): any other flag but -f or --tokens is refused in one line
// naming it.
void refuse_flags_besides_resume(const CLI::App& cmd);

}  // namespace hd::cli
