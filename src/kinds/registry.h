// Every experiment kind this build knows, in the order --help lists their commands, and the
// lookups the other layers make: by a file's meta "kind" or by name. No layer compares a kind's
// name as a string; a kind's name is written once, in its own folder.
#pragma once
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kinds/kind.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

const std::vector<std::unique_ptr<const RunKind>>& run_kinds();

// nullptr when no kind has that name.
const RunKind* kind_named(std::string_view name);
// The kind serve's run form starts (RunKind::runs_from_form).
const RunKind& form_kind();

// The file's kind (meta "kind"); InputError for a file without one or of a kind this build
// does not know.
const RunKind& kind_of(const store::Experiment& e);
const RunKind& kind_of_file(const std::string& path);

// InputError unless the file holds an experiment of kind `name` ("'F' is a sweep, not a diff").
void require_kind(const store::Experiment& e, std::string_view name);

// `path` opened to add to, as a file of kind `name` (its configuration there, its kind checked):
// nullopt, once `progress` has said so, when it is complete already. Every kind's --resume
// but recommend's, which first removes the files of runs killed mid-write, complete or not.
std::optional<store::Experiment> open_to_resume(const std::string& path, std::string_view name,
                                                const ProgressFn& progress);

// Every kind's command on `app`, in registry order.
void add_kind_commands(CLI::App& app, cli::Context& ctx);

// heterodyne verify: the integrity check, then the file's kind re-runs it (kinds/kind.h).
// Returns 0 when everything matches; RuntimeError names the first mismatch, InputError says
// why the run cannot be reproduced here (without --force).
int verify(const std::string& path, const run::VerifyOptions& options, const ProgressFn& progress);

}  // namespace hd::kinds
