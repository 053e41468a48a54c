#include "common/cached_file.h"

#include <fstream>
#include <system_error>

#include "common/output_file.h"
#include "common/sha256.h"
#include "errors.h"

namespace hd {

std::string ensure_cached(const std::filesystem::path& path,
                          const std::function<void(const std::string&)>& make) {
  const std::string sidecar = path.string() + ".sha256";
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::is_regular_file(sidecar, ec)) {
    std::ifstream in(sidecar);
    std::string recorded;
    if (in >> recorded && recorded == sha256_file(path.string())) return path.string();
  }
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    throw RuntimeError("cannot create cache directory " + path.parent_path().string() + ": " +
                       ec.message());
  }
  // Concurrent runs may both make it; each moves a complete file into place, so the loser
  // merely replaces an identical file.
  const OutputPolicy own_cache(true);
  OutputFile file(path.string(), own_cache);
  make(file.temporary());
  write_output_file(sidecar, sha256_file(file.temporary()) + "\n", own_cache);
  file.commit();
  return path.string();
}

}  // namespace hd
