#include "run/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/input_file.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "engine/model.h"
#include "errors.h"
#include "common/stop.h"

namespace hd::run {

static std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Reads `fd` to its end: at most kMaxTextBytes, stopping when a stop is requested. `what`
// names the text in messages ("text file 'x'", "the text on standard input").
static std::string read_bounded(int fd, const std::string& what, size_t expected) {
  std::string text;
  text.reserve(expected);
  std::vector<char> block(size_t{1} << 20);
  for (;;) {
    if (stop_requested()) throw Stopped("stopped while reading " + what + "; nothing written");
    const ssize_t got = ::read(fd, block.data(), block.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError("cannot read " + what + ": " + std::strerror(errno));
    if (got == 0) break;
    text.append(block.data(), static_cast<size_t>(got));
    if (text.size() > kMaxTextBytes) {  // it grew while being read, or a pipe is that long
      throw InputError(what + " is more than the " + mib(kMaxTextBytes) + " heterodyne reads");
    }
  }
  if (text.empty()) throw InputError(what + " is empty");
  if (const auto bad = first_invalid_utf8(text)) {
    throw InputError(what + " is not valid UTF-8 (at byte " + std::to_string(*bad) + ")");
  }
  return text;
}

// Standard input, read into memory with a file's checks. A terminal is refused: a run would
// sit waiting for text typed by hand.
static std::string read_standard_input() {
  if (::isatty(STDIN_FILENO)) {
    throw InputError(
        "-f - reads the text from standard input, which is a terminal here: pipe "
        "the text in (… -f - < text.txt) or give its file");
  }
  return read_bounded(STDIN_FILENO, "the text on standard input", 0);
}

std::string read_text_file(const std::string& path) {
  if (path == "-") return read_standard_input();
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
  try {
    std::string text =
        read_bounded(fd, "text file '" + path + "'", static_cast<size_t>(opened.st_size));
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string read_stored_text(const std::string& stored, const nlohmann::json& provenance,
                             const std::string& given, const std::string& how) {
  const std::string sha256 = provenance.at("text").at("sha256").get<std::string>();
  const std::string shown = sha256.substr(0, 16) + "…";
  if (given.empty() && stored == "-") {
    throw InputError("this run read its text from standard input: give it again, " + how +
                     " -f FILE (or -f - with the text on standard input); it must hash to "
                     "sha256 " +
                     shown);
  }
  const std::string text = read_text_file(given.empty() ? stored : given);
  if (sha256_bytes(text) == sha256) return text;
  if (given.empty()) {
    throw InputError("the text file '" + stored +
                     "' has changed since this run started (give "
                     "the text it read with " +
                     how + " -f FILE)");
  }
  throw InputError("the text given with -f " + given + " is not the one this run read (sha256 " +
                   sha256_bytes(text).substr(0, 16) + "…, the run's " + shown + ")");
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

static bool encodes(const engine::Model& m, std::string_view text) {
  try {
    (void)m.tokenize(text, false);
    return true;
  } catch (const InputError&) {  // a character the vocabulary has no token for
    return false;
  }
}

std::string encodable_text(const engine::Model& m, const std::string& text, bool skip,
                           const std::function<void(const std::string&)>& progress,
                           size_t* dropped_lines) {
  size_t dropped = 0;
  if (dropped_lines != nullptr) *dropped_lines = 0;
  if (!skip) return text;
  // Blocks of whole lines are tried at once (one tokenizer call for ~1 MiB, not one a line);
  // only a block that fails is tried line by line.
  constexpr size_t kBlock = size_t{1} << 20;
  std::string kept;
  kept.reserve(text.size());
  for (size_t start = 0; start < text.size();) {
    if (stop_requested()) throw Stopped("stopped while checking the text; nothing written");
    const size_t line_end = text.find('\n', std::min(start + kBlock, text.size() - 1));
    const size_t end = line_end == std::string::npos ? text.size() : line_end + 1;
    if (end - start > kMaxWholeTokenizeBytes) {
      throw InputError("the text has a line of more than " + mib(kMaxWholeTokenizeBytes) +
                       ": --skip-unencodable checks the text line by line");
    }
    const std::string_view block = std::string_view(text).substr(start, end - start);
    if (encodes(m, block)) {
      kept.append(block);
    } else {
      for (size_t at = 0; at < block.size();) {
        const size_t nl = block.find('\n', at);
        const size_t next = nl == std::string_view::npos ? block.size() : nl + 1;
        const std::string_view line = block.substr(at, next - at);
        if (encodes(m, line.substr(0, line.size() - (nl == std::string_view::npos ? 0 : 1)))) {
          kept.append(line);
        } else {
          ++dropped;
        }
        at = next;
      }
    }
    start = end;
  }
  if (kept.empty()) throw InputError("this model's vocabulary can encode no line of the text");
  if (dropped_lines != nullptr) *dropped_lines = dropped;
  if (dropped > 0) {
    progress("--skip-unencodable: dropped " + std::to_string(dropped) +
             " line(s) this model's vocabulary cannot encode");
  }
  return kept;
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
