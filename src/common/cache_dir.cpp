#include "common/cache_dir.h"

#include <cstdlib>
#include <string>

#include "errors.h"

namespace hd {

std::filesystem::path cache_dir() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (const std::string dir = env("HETERODYNE_CACHE"); !dir.empty()) return dir;
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) {
    return std::filesystem::path(xdg) / "heterodyne";
  }
  const std::string home = env("HOME");
  if (home.empty()) throw RuntimeError("cannot place the cache: HOME and HETERODYNE_CACHE unset");
  return std::filesystem::path(home) / ".cache" / "heterodyne";
}

}  // namespace hd
