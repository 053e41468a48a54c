// A run asked for through the page's form (POST /api/runs), checked and turned into the
// arguments of the command of the kind the form runs (kinds::form_kind(): the diff). Every path is resolved inside its root; every field is
// checked here so that a bad form gets its message at once, not a failed run later. Checking
// writes nothing: the server names the run and writes a pasted text only once it is accepted.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/sandbox.h"

namespace hd::serve {

struct RunPlan {
  std::vector<std::string> args;  // after the binary's name: the kind's command, its flags; no text, no -o
  std::string stem;               // "<A>-vs-<B>": the run's name after "run<N>-"
  std::string text_file;          // a text under --models (absolute), or empty
  std::string pasted_text;        // the text itself when none of those
};

// Throws InputError with a one-line message naming the field.
RunPlan plan_run(const nlohmann::json& form, const Sandbox& models);

// The whole argument list, once the text has a file and the run a name. No --force: diff
// refuses an output that exists, so a run never replaces an experiment.
std::vector<std::string> run_args(const RunPlan& plan, const std::string& text_path,
                                  const std::string& output);

}  // namespace hd::serve
