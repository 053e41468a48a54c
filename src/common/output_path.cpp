#include "common/output_path.h"

#include <unistd.h>

#include <filesystem>

#include "errors.h"

namespace hd {

namespace fs = std::filesystem;

void check_output_path(const std::string& path) {
  if (path.empty()) throw InputError("no output path given");
  std::error_code ec;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw InputError("output directory '" + dir.string() + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError("output directory '" + dir.string() + "' is not writable");
  if (fs::is_directory(p, ec)) throw InputError("output '" + path + "' is a directory");
}

}  // namespace hd
