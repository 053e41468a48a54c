#include "common/input_file.h"

#include <sys/stat.h>

#include "errors.h"

namespace hd {

std::string file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(what + " '" + path + "' does not exist");
  if (S_ISDIR(st.st_mode)) throw InputError(what + " '" + path + "' is a directory");
  refuse_special_file(path, what);
}

void refuse_special_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    throw InputError(what + " '" + path + "' is " + file_kind(st.st_mode) +
                     ", not a regular file");
  }
}

}  // namespace hd
