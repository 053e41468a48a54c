#include "common/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/fatal.h"
#include "common/input_file.h"
#include "errors.h"

namespace hd {

namespace fs = std::filesystem;

std::vector<FileId> file_ids(const std::vector<std::string>& paths) {
  std::vector<FileId> out;
  for (const auto& p : paths) {
    struct stat st {};
    if (!p.empty() && ::stat(p.c_str(), &st) == 0) out.push_back({st.st_dev, st.st_ino});
  }
  return out;
}

// The input among `inputs` that is the file `st`, if any.
static const std::string* same_as_input(const struct stat& st, const OutputPolicy& policy) {
  for (const auto& in : policy.inputs) {
    struct stat is {};
    if (!in.empty() && ::stat(in.c_str(), &is) == 0 && is.st_dev == st.st_dev &&
        is.st_ino == st.st_ino) {
      return &in;
    }
  }
  return nullptr;
}

std::string check_output_path(const std::string& path, const OutputPolicy& policy) {
  if (path.empty()) throw InputError("no output path given");
  if (is_stdout(path))
    throw InputError("this output cannot be standard output ('-'): give a file name");
  std::string target = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0) {
    struct stat st = lst;
    if (S_ISLNK(lst.st_mode)) {
      if (::stat(path.c_str(), &st) != 0)
        throw InputError("output '" + path + "' is a symbolic link that leads nowhere");
      if (S_ISREG(st.st_mode)) {
        std::error_code ec;
        target = fs::canonical(path, ec).string();
        if (ec) throw InputError("cannot resolve output '" + path + "': " + ec.message());
      }
    }
    if (S_ISDIR(st.st_mode)) throw InputError("output '" + path + "' is a directory");
    if (!S_ISREG(st.st_mode)) {
      throw InputError("output '" + path + "' is " + file_kind(st.st_mode) +
                       ", not a regular file (write to a file, or to '-' where a command streams)");
    }
    if (const std::string* in = same_as_input(st, policy)) {
      throw InputError("output '" + path + "' is the same file as the input '" + *in +
                       "': refusing to overwrite it");
    }
    if (!policy.force) throw InputError("'" + path + "' already exists: " + policy.exists_advice);
  } else if (errno != ENOENT) {
    throw InputError("cannot use output '" + path + "': " + std::strerror(errno));
  }
  const fs::path p(target);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError("output directory '" + dir.string() + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError("output directory '" + dir.string() + "' is not writable");
  return target;
}

void move_into_place(const std::string& temporary, const std::string& target,
                     const OutputPolicy& policy, const std::vector<FileId>& inputs) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    struct stat st {};
    if (::lstat(target.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode)) {
        throw RuntimeError("'" + target + "' became " + file_kind(st.st_mode) +
                           " while this command ran: nothing replaced");
      }
      if (!policy.force)
        throw RuntimeError("'" + target + "' appeared while this command ran: not replaced");
      for (const FileId& id : inputs) {
        if (id == FileId{st.st_dev, st.st_ino})
          throw RuntimeError("'" + target + "' is now one of this command's inputs: not replaced");
      }
      if (::rename(temporary.c_str(), target.c_str()) != 0) {
        throw RuntimeError("cannot move the finished output to '" + target +
                           "': " + std::strerror(errno));
      }
      return;
    }
    // A new path: never replace what another process put there in the meantime. Filesystems
    // without RENAME_NOREPLACE (EINVAL: NFS, some FUSE) get link(2), which fails on EEXIST too.
    if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) ==
        0) {
      return;
    }
    if (errno == EINVAL && ::link(temporary.c_str(), target.c_str()) == 0) {
      ::unlink(temporary.c_str());
      return;
    }
    if (errno != EEXIST) {
      throw RuntimeError("cannot move the finished output to '" + target +
                         "': " + std::strerror(errno));
    }
  }
  throw RuntimeError("'" + target + "' keeps changing while this command runs: not replaced");
}

OutputFile::OutputFile(const std::string& path, const OutputPolicy& policy)
    : target_(check_output_path(path, policy)), policy_(policy),
      input_ids_(file_ids(policy.inputs)) {
  static std::atomic<int> serial{0};
  temporary_ = target_ + ".part-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw InputError("cannot write next to '" + target_ + "': " + std::strerror(errno));
  }
  fatal::add_temporary(temporary_);
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    ::close(fd);
    throw RuntimeError("cannot write '" + temporary_ + "'");
  }
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) ::unlink(temporary_.c_str());
  fatal::remove_temporary(temporary_);
}

void OutputFile::write(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    throw RuntimeError("writing '" + target_ + "' failed: " + std::strerror(errno) +
                       " (is the disk full?)");
  }
  written_ += n;
}

void OutputFile::commit() {
  // A file replaced keeps its permissions.
  struct stat old {};
  if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    ::fchmod(::fileno(file_), old.st_mode & 07777);
  }
  errno = 0;
  const bool flushed = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  int why = errno;
  const bool closed = std::fclose(file_) == 0;
  if (flushed && !closed) why = errno;
  file_ = nullptr;
  if (!flushed || !closed) {
    throw RuntimeError("writing '" + target_ + "' failed: " +
                       (why != 0 ? std::strerror(why) : "the write did not complete") +
                       " (is the disk full?)");
  }
  move_into_place(temporary_, target_, policy_, input_ids_);
  committed_ = true;
}

Removed remove_stale_temporaries(const std::string& dir, const std::vector<std::string>& names) {
  Removed removed;
  std::error_code ec;
  const auto digits = [](const std::string& t) {
    return !t.empty() && t.size() <= 9 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) continue;
    // "<name>.part-<pid>-<n>", both decimal: the name OutputFile gives; nested where a writer
    // wrote its own output through another's temporary (llama.cpp's quantizer into recommend's
    // variant): every writer's pid must be gone.
    std::string base = entry.path().filename().string();
    std::vector<pid_t> writers;
    for (size_t at = base.rfind(".part-"); at != std::string::npos; at = base.rfind(".part-")) {
      const std::string tail = base.substr(at + 6);
      const size_t dash = tail.find('-');
      if (dash == std::string::npos || !digits(tail.substr(0, dash)) ||
          !digits(tail.substr(dash + 1)))
        break;
      writers.push_back(static_cast<pid_t>(std::stol(tail.substr(0, dash))));
      base.resize(at);
    }
    if (writers.empty() || std::find(names.begin(), names.end(), base) == names.end()) continue;
    const bool gone = std::all_of(writers.begin(), writers.end(), [](pid_t pid) {
      return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
    });
    if (!gone) continue;
    const uintmax_t size = entry.file_size(ec);
    if (::unlink(entry.path().c_str()) == 0) {
      ++removed.files;
      removed.bytes += ec ? 0 : size;
    }
  }
  return removed;
}

void write_output_file(const std::string& path, std::string_view content,
                       const OutputPolicy& policy) {
  OutputFile f(path, policy);
  f.write(content);
  f.commit();
}

void flush_stdout() {
  errno = 0;
  std::cout.flush();
  const bool ok = std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout.good();
  if (!ok) {
    const int why = errno;
    throw RuntimeError(std::string("cannot write to standard output: ") +
                       (why != 0 ? std::strerror(why) : "the write failed") +
                       " (is the disk full, or did the reader go away?)");
  }
}

}  // namespace hd
