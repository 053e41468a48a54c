// Which worker executable runs an arm. A build spec names a llama.cpp build:
//
//   pinned                      this project's pinned llama.cpp, in a worker process
//   pinned,GGML_NATIVE=OFF      the same tree built with other CMake options (comma-separated)
//   /opt/llama.cpp[,OPT=V…]     a llama.cpp checkout
//   npm:node-llama-cpp@3.20.0   the llama.cpp another node-llama-cpp release carries
//   /path/to/heterodyne-worker  a worker already built (an executable file)
//
// Everything but the last is built once by scripts/worker.sh into the cache directory
// (~/.cache/heterodyne/workers/), keyed like llama.cpp's own builds; later runs reuse it.
#pragma once
#include <string>

namespace hd::engine {

// Checks the form of `spec` before anything is built or fetched: SOURCE[,OPTION=VALUE…] with
// SOURCE pinned, npm:node-llama-cpp@X.Y.Z or a directory holding a llama.cpp tree, or a
// heterodyne-worker executable alone. InputError naming the expected form otherwise.
void check_build_spec(const std::string& spec);

// The worker executable for `spec` ("" : this binary's own build, for RPC arms). Builds it on
// first use, with progress on stderr. Throws InputError for a spec that names nothing usable.
std::string worker_executable(const std::string& spec);

}  // namespace hd::engine
