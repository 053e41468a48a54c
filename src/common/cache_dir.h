// Where heterodyne keeps what it can rebuild (llama.cpp builds, quantized models, file hashes):
// ${HETERODYNE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/heterodyne}, the same rule as scripts/llama.sh.
#pragma once
#include <filesystem>

namespace hd {

// Empty variables count as unset, as in sh. RuntimeError when none of them is set.
std::filesystem::path cache_dir();

}  // namespace hd
