// Every file a command writes goes through here, so that writing an output never destroys what
// it should not: not a device node, FIFO, socket or directory that happens to sit at the path
// (the tests run as root, and root can replace /dev/null), not one of the command's own inputs
// (the same file by device and inode, so links and hard links count), and not an existing file
// unless --force says so. An output is written under a temporary name next to its target and
// moved over it only when complete, after the target is checked again.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hd {

// What may sit at an output path, and what must never be there.
struct OutputPolicy {
  OutputPolicy() = default;
  explicit OutputPolicy(bool replace, std::vector<std::string> read = {},
                        std::string advice = "use --force to replace it")
      : force(replace), inputs(std::move(read)), exists_advice(std::move(advice)) {}

  bool force = false;               // an existing regular file may be replaced
  std::vector<std::string> inputs;  // files the command reads (and its other outputs)
  // The end of the message for an existing file without force.
  std::string exists_advice = "use --force to replace it";
};

// "-": the output is standard output.
inline bool is_stdout(const std::string& path) { return path == "-"; }

// Checks `path` before any work is done. InputError when the path is empty; its directory is
// missing or not writable; it exists and is not a regular file (or a symbolic link to one); it
// exists and !force; it is one of the inputs. Returns where to write: `path`, or the regular
// file a symbolic link at `path` leads to (the link itself is kept).
std::string check_output_path(const std::string& path, const OutputPolicy& policy);

// Identity of a file on disk, to recognise it under another name.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

// Moves `temporary` to `target` after checking `target` again: still a new path, or (with
// force) a regular file that is not one of `inputs`. RuntimeError when something else appeared
// there meanwhile; `temporary` is then left for the caller to remove.
void move_into_place(const std::string& temporary, const std::string& target,
                     const OutputPolicy& policy, const std::vector<FileId>& inputs);

// Identities of the existing files among `paths` (symbolic links followed).
std::vector<FileId> file_ids(const std::vector<std::string>& paths);

// A file written under "<target>.part-<pid>-<n>" and moved over the target by commit(). Until
// then the target is untouched; destroyed without commit (or on a fatal exit), the temporary is
// removed.
class OutputFile {
 public:
  OutputFile(const std::string& path, const OutputPolicy& policy);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Where writers that take a file name (llama.cpp's quantizer) write.
  const std::string& temporary() const { return temporary_; }
  void write(const void* data, size_t n);  // RuntimeError on a short write (a full disk)
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  size_t written() const { return written_; }
  // Flushes, syncs and moves the temporary into place.
  void commit();

 private:
  std::string target_, temporary_;
  OutputPolicy policy_;
  std::vector<FileId> input_ids_;
  std::FILE* file_ = nullptr;
  size_t written_ = 0;
  bool committed_ = false;
};

// Removes the temporaries OutputFile left in `dir` for the outputs `names` when its process was
// killed (SIGKILL: no destructor ran): regular files "<name>.part-<pid>-<n>" whose pid is no
// live process on this host (and "<name>.part-<pid>-<n>.part-<pid>-<m>", a writer's temporary
// of another's temporary, where no pid is). A live writer's are kept; so is every other file.
// Call it holding the lock that keeps other writers of those outputs away (on a shared file
// system a pid says nothing about another host's processes). Returns how many files and bytes
// were removed.
struct Removed {
  int files = 0;
  uintmax_t bytes = 0;
};
Removed remove_stale_temporaries(const std::string& dir, const std::vector<std::string>& names);

// The whole of `content` as the file `path` (atomically, as OutputFile).
void write_output_file(const std::string& path, std::string_view content,
                       const OutputPolicy& policy);

// Standard output, checked: RuntimeError "cannot write to standard output: <why>" when the
// bytes written so far did not all get there (a full disk, a closed pipe).
void flush_stdout();

}  // namespace hd
