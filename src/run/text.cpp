#include "run/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/input_file.h"
#include "common/stop.h"
#include "common/utf8.h"
#include "engine/model.h"
#include "errors.h"

namespace hd::run {

static std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

namespace {

// How a file a run reads is named in messages, and whether it must be UTF-8: a text, or token
// ids (--tokens, which parse_token_ids checks byte by byte).
struct FileKind {
  const char* file;      // "text file"
  const char* on_stdin;  // "the text on standard input"
  const char* terminal;  // the refusal of a terminal as standard input
  bool utf8;
};
constexpr FileKind kTextKind = {
    "text file", "the text on standard input",
    "-f - reads the text from standard input, which is a terminal here: pipe the text in (… -f - "
    "< text.txt) or give its file",
    true};
constexpr FileKind kTokensKind = {
    "tokens file", kTokensOnStdin,
    "--tokens - reads token ids from standard input, which is a terminal here: pipe them in (… "
    "--tokens - < ids.txt) or give their file",
    false};

// Reads `fd` to its end: at most kMaxTextBytes, stopping when a stop is requested. `what`
// names the input in messages ("text file 'x'", "the text on standard input").
std::string read_bounded(int fd, const std::string& what, size_t expected, bool utf8) {
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
  if (const auto bad = utf8 ? first_invalid_utf8(text) : std::nullopt) {
    throw InputError(what + " is not valid UTF-8 (at byte " + std::to_string(*bad) + ")");
  }
  return text;
}

// The file at `path`, or standard input for "-" (a pipe or a file, not a terminal: a run would
// sit waiting for input typed by hand), read into memory with the checks of its kind.
std::string read_input_file(const std::string& path, const FileKind& k) {
  if (path == "-") {
    if (::isatty(STDIN_FILENO)) throw InputError(k.terminal);
    return read_bounded(STDIN_FILENO, k.on_stdin, 0, k.utf8);
  }
  const std::string named = std::string(k.file) + " '" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot read " + named);
  if (S_ISDIR(st.st_mode)) throw InputError(named + " is a directory");
  refuse_special_file(path, k.file);
  if (static_cast<uint64_t>(st.st_size) > kMaxTextBytes) {
    throw InputError(named + " is " + mib(static_cast<size_t>(st.st_size)) + ", more than the " +
                     mib(kMaxTextBytes) + " heterodyne reads");
  }
  // O_NONBLOCK: should a FIFO take the file's place after the check, open does not wait for it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError("cannot read " + named);
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    ::close(fd);
    throw InputError(named + " is not a regular file");
  }
  try {
    std::string bytes = read_bounded(fd, named, static_cast<size_t>(opened.st_size), k.utf8);
    ::close(fd);
    return bytes;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace

std::string read_text_file(const std::string& path) { return read_input_file(path, kTextKind); }

std::string read_tokens_file(const std::string& path) { return read_input_file(path, kTokensKind); }

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

std::vector<std::vector<int32_t>> cut_chunks(const engine::Model& m,
                                             const std::vector<int32_t>& all, int chunk_tokens,
                                             int max_chunks, const std::string& what) {
  const size_t n = static_cast<size_t>(chunk_tokens);
  size_t count = all.size() / n;
  if (count == 0) {
    throw InputError(what + " has " + std::to_string(all.size()) +
                     " tokens, fewer than one chunk of " + std::to_string(n));
  }
  if (max_chunks > 0) count = std::min(count, static_cast<size_t>(max_chunks));
  // A model without a BOS (no_vocab fixtures: bos -1) has nothing to put there.
  const bool bos = m.info().add_bos && m.info().bos >= 0;
  std::vector<std::vector<int32_t>> out;
  for (size_t c = 0; c < count; ++c) {
    std::vector<int32_t> chunk(all.begin() + static_cast<long>(c * n),
                               all.begin() + static_cast<long>((c + 1) * n));
    if (bos) chunk[0] = m.info().bos;
    out.push_back(std::move(chunk));
  }
  return out;
}

std::vector<std::vector<int32_t>> chunk_text(const engine::Model& m, const std::string& text,
                                             int chunk_tokens, int max_chunks) {
  const size_t n = static_cast<size_t>(chunk_tokens);
  return cut_chunks(
      m, tokenize_text(m, text, max_chunks > 0 ? n * static_cast<size_t>(max_chunks) : 0),
      chunk_tokens, max_chunks, "the text");
}

}  // namespace hd::run
