#include "run/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/input_file.h"
#include "common/utf8.h"
#include "engine/model.h"
#include "errors.h"
#include "run/diff.h"

namespace hd::run {

static std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string read_text_file(const std::string& path) {
  if (path == "-") {
    throw InputError("the text cannot come from standard input ('-'): a run records its text "
                     "file and reads it again to resume and verify; save it to a file");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot read text file '" + path + "'");
  if (S_ISDIR(st.st_mode)) throw InputError("text file '" + path + "' is a directory");
  refuse_special_file(path, "text file");
  if (static_cast<uint64_t>(st.st_size) > kMaxTextBytes) {
    throw InputError("text file '" + path + "' is " + mib(static_cast<size_t>(st.st_size)) +
                     ", more than the " + mib(kMaxTextBytes) + " heterodyne reads");
  }
  // O_NONBLOCK: should a FIFO take the file's place after the check, open does not wait for it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError("cannot read text file '" + path + "'");
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    ::close(fd);
    throw InputError("text file '" + path + "' is not a regular file");
  }
  std::string text;
  text.reserve(static_cast<size_t>(opened.st_size));
  std::vector<char> block(size_t{1} << 20);
  for (;;) {
    if (stop_requested()) {
      ::close(fd);
      throw Stopped("stopped while reading the text file '" + path + "'; nothing written");
    }
    const ssize_t got = ::read(fd, block.data(), block.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int why = errno;
      ::close(fd);
      throw InputError("cannot read text file '" + path + "': " + std::strerror(why));
    }
    if (got == 0) break;
    text.append(block.data(), static_cast<size_t>(got));
    if (text.size() > kMaxTextBytes) {  // it grew while being read
      ::close(fd);
      throw InputError("text file '" + path + "' is more than the " + mib(kMaxTextBytes) +
                       " heterodyne reads");
    }
  }
  ::close(fd);
  if (text.empty()) throw InputError("text file '" + path + "' is empty");
  if (const auto bad = first_invalid_utf8(text)) {
    throw InputError("text file '" + path + "' is not valid UTF-8 (at byte " +
                     std::to_string(*bad) + ")");
  }
  return text;
}

static std::vector<int32_t> tokenize_whole(const engine::Model& m, const std::string& text) {
  if (text.size() > kMaxWholeTokenizeBytes) {
    throw InputError("the text is " + mib(text.size()) + "; heterodyne tokenizes at most " +
                     mib(kMaxWholeTokenizeBytes) +
                     " at once: give a chunk count (--max-chunks N: only what N chunks need is "
                     "tokenized), or a shorter text");
  }
  return m.tokenize(text, true);
}

// The end of a prefix of about `bytes`: just after the next line break within 64 KiB, else
// the next space, else the next character boundary (a text may have no line breaks at all).
static size_t cut_after(const std::string& text, size_t bytes) {
  if (bytes >= text.size()) return text.size();
  constexpr size_t kLook = size_t{1} << 16;
  const std::string_view window = std::string_view(text).substr(bytes, kLook);
  for (const char c : {'\n', ' '}) {
    if (const size_t at = window.find(c); at != std::string_view::npos) return bytes + at + 1;
  }
  size_t at = bytes;
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  return at;
}

std::vector<int32_t> tokenize_text(const engine::Model& m, const std::string& text,
                                   size_t needed) {
  if (needed == 0) return tokenize_whole(m, text);
  constexpr size_t kGuard = 64;  // tokens beyond the needed ones, away from the cut
  size_t budget = std::max<size_t>(needed * 8, size_t{1} << 16);
  for (;;) {
    if (stop_requested()) throw Stopped("stopped while tokenizing the text; nothing written");
    const size_t cut = cut_after(text, budget);
    if (cut == text.size()) {
      auto all = tokenize_whole(m, text);
      if (all.size() > needed) all.resize(needed);
      return all;
    }
    auto tokens = m.tokenize(std::string_view(text).substr(0, cut), true);
    if (tokens.size() >= needed + kGuard) {
      const size_t longer = cut_after(text, cut + cut / 2);
      auto check = longer == text.size() ? tokenize_whole(m, text)
                                         : m.tokenize(std::string_view(text).substr(0, longer),
                                                      true);
      if (check.size() >= needed &&
          std::equal(tokens.begin(), tokens.begin() + static_cast<long>(needed), check.begin())) {
        tokens.resize(needed);
        return tokens;
      }
    }
    budget *= 2;
  }
}

std::vector<std::vector<int32_t>> chunk_text(const engine::Model& m, const std::string& text,
                                             int chunk_tokens, int max_chunks) {
  const size_t n = static_cast<size_t>(chunk_tokens);
  const std::vector<int32_t> all =
      tokenize_text(m, text, max_chunks > 0 ? n * static_cast<size_t>(max_chunks) : 0);
  size_t count = all.size() / n;
  if (count == 0) {
    throw InputError("the text has " + std::to_string(all.size()) +
                     " tokens, fewer than one chunk of " + std::to_string(n));
  }
  if (max_chunks > 0) count = std::min(count, static_cast<size_t>(max_chunks));
  std::vector<std::vector<int32_t>> out;
  for (size_t c = 0; c < count; ++c) {
    std::vector<int32_t> chunk(all.begin() + static_cast<long>(c * n),
                               all.begin() + static_cast<long>((c + 1) * n));
    if (m.info().add_bos) chunk[0] = m.info().bos;
    out.push_back(std::move(chunk));
  }
  return out;
}

}  // namespace hd::run
