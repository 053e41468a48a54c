// A file of heterodyne's cache (quantized models, architecture fixtures), made
// once and trusted afterwards only while its bytes hash to what was recorded as it was made.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace hd {

// `path`, made by `make(temporary path)` when absent. The SHA-256 of what `make` wrote is
// recorded in "<path>.sha256"; a file truncated, edited or swapped into its slot is made again,
// not used. RuntimeError when the cache directory cannot be created.
std::string ensure_cached(const std::filesystem::path& path,
                          const std::function<void(const std::string&)>& make);

}  // namespace hd
