#include "serve/run_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "errors.h"

namespace hd::serve {

long highest_run_number(const std::filesystem::path& dir) {
  long highest = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("run", 0) != 0) continue;
    size_t i = 3;
    long n = 0;
    // Nine digits at most: a name with more is not one of ours, and cannot overflow n.
    while (i < name.size() && i < 12 && std::isdigit(static_cast<unsigned char>(name[i]))) {
      n = n * 10 + (name[i++] - '0');
    }
    if (i > 3 && i < name.size() && name[i] == '-') highest = std::max(highest, n);
  }
  return highest;
}

bool write_new_file(const std::filesystem::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw RuntimeError("cannot create " + path.filename().string() +
                       " in the experiments folder: " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(n < 0 ? errno : EIO);
      ::close(fd);
      std::error_code ec;
      std::filesystem::remove(path, ec);
      throw RuntimeError("cannot write " + path.filename().string() +
                         " in the experiments folder: " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    std::error_code ec;
    std::filesystem::remove(path, ec);
    throw RuntimeError("cannot write " + path.filename().string() +
                       " in the experiments folder: " + why);
  }
  return true;
}

}  // namespace hd::serve
