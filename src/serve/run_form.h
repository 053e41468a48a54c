// A run asked for through the page's form (POST /api/runs), checked and turned into the
// arguments of `heterodyne diff`. Every path is resolved inside its root; every field is
// checked here so that a bad form gets its message at once, not a failed run later.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/sandbox.h"

namespace hd::serve {

struct RunPlan {
  std::vector<std::string> args;  // after the binary's name: {"diff", ...}
  std::string experiment;         // name (file stem) under the experiments folder
};

// Throws InputError with a one-line message naming the field. `id` makes the names unique.
// Pasted text is written next to the experiment (<name>.txt) so the run has a file to read.
RunPlan plan_run(const nlohmann::json& form, const Sandbox& models, const Sandbox& experiments,
                 int id);

}  // namespace hd::serve
