// The kind of experiment a file holds, as the store reads and writes it: meta "kind", the name
// of the kind (and of the command that writes it). What each kind means is kinds/'s
// (kinds/registry.h); the store never compares the name with one.
#pragma once
#include <string>
#include <string_view>

namespace hd::store {

class Experiment;

// Meta "kind"; InputError for a file without one.
std::string kind_name(const Experiment& e);

// Writes the file's kind (meta "kind").
void set_kind(Experiment& e, std::string_view name);

// What to do with a file whose run has not finished: "finish it with heterodyne diff --resume
// FILE" (every kind resumes, with the command of its name).
std::string finish_hint(std::string_view kind, const std::string& path);
std::string finish_hint(const Experiment& e);

}  // namespace hd::store
