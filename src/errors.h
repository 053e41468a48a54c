// Errors are values at the boundaries: every layer throws one of these two, and only
// cli/main.cpp turns them into one line on stderr and an exit code.
#pragma once
#include <stdexcept>
#include <string>

namespace hd {

// The user handed us something we cannot use (a flag, a file, a text): exit code 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Something failed while working on good input (llama.cpp refused, disk full): exit code 1.
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A stop was requested (SIGINT, SIGTERM) before anything worth keeping was written: exit
// code 130, as for a run stopped between chunks.
struct Stopped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace hd
