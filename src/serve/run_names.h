// The names serve gives its runs' files: run<N>-<A>-vs-<B>, with N past the highest run<N>- of
// any file already in the experiments folder, so that a restarted server continues the
// numbering instead of reusing (and overwriting) the names of the runs before it.
#pragma once
#include <filesystem>
#include <string>

namespace hd::serve {

// The highest N of a name run<N>-... directly in `dir` (0 when there is none).
long highest_run_number(const std::filesystem::path& dir);

// `text` written to a file `path` that must not exist yet (O_EXCL, no symlink followed). False
// when it exists; throws RuntimeError when it cannot be written (the partial file is removed).
bool write_new_file(const std::filesystem::path& path, const std::string& text);

}  // namespace hd::serve
