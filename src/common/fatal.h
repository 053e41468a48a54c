// The last resort, for when the process cannot go on: an abort inside llama.cpp (a failed
// GGML_ASSERT on a malformed model) or SIGBUS (a mapped model file cut short while in use).
// It keeps the contract of every other failure: one line on stderr, exit 1, and no
// half-written output — the temporary files of unfinished outputs are removed; an experiment's
// finished chunks stay (its in-flight transaction rolls back on the next open).
// Everything a fatal exit reads is kept in fixed buffers, so the exit is async-signal-safe.
#pragma once
#include <string>

namespace hd::fatal {

// A temporary file that a fatal exit removes (an output not yet moved into place).
void add_temporary(const std::string& path);
void remove_temporary(const std::string& path);

// What the process is doing, named in a fatal line: "loading '/m/model.gguf'".
void set_activity(const std::string& activity);
// Appended to a fatal line: "the 3 chunks already stored are kept: finish with ...". Empty: none.
void set_resume_hint(const std::string& hint);

// A model file mapped into memory, and its size then: a SIGBUS names the one that shrank.
void add_mapped_file(const std::string& path);

// Writes "heterodyne: error: <what>[ while <activity>][; <hint>]", removes the temporaries,
// and exits with status 1. Async-signal-safe.
[[noreturn]] void exit_with(const char* what);

// SIGBUS becomes a fatal exit naming the mapped file that was cut short.
void install_sigbus_handler();

}  // namespace hd::fatal
