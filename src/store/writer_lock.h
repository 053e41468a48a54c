// Whether another process writes an experiment file: its writer holds a flock on the file for
// the whole run (experiment.cpp). Asked by readers that may have the same file open through
// SQLite on other threads (serve), so without opening the file: closing any descriptor of it
// would drop this process's fcntl locks on it, SQLite's read locks among them, and taking a
// lock, even for a moment, would make a writer starting then find the file busy.
#pragma once
#include <optional>
#include <string>

namespace hd::store {

// From /proc/locks: a flock held on the file `path` names (symbolic links followed), by any
// process, this one too (a writer of this process through another descriptor writes it as
// much; Experiment::live_status answers for its own). nullopt where /proc/locks or the file
// cannot be read. Matched by inode number alone (some filesystems show another device number
// there than stat gives): another file's lock of the same number reads as "written", never the
// other way.
std::optional<bool> flocked(const std::string& path);

}  // namespace hd::store
