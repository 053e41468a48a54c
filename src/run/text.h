// The text a run reads, and its tokens: read from a regular file (never a FIFO or device) or
// from standard input ("-"), checked as strict UTF-8, bounded in size, and tokenized only as
// far as the run needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hd::engine {
class Model;
}

namespace hd::run {

// The largest text file heterodyne reads.
inline constexpr size_t kMaxTextBytes = size_t{1} << 30;
// The largest text tokenized in one piece (llama.cpp's tokenizer takes ~45 bytes of memory per
// byte of text): longer texts need a chunk count, which bounds what is tokenized.
inline constexpr size_t kMaxWholeTokenizeBytes = size_t{64} << 20;

// The whole file, or standard input for "-" (a pipe or a file, not a terminal). InputError:
// missing, a directory, not a regular file, empty, larger than kMaxTextBytes, not UTF-8;
// Stopped when a stop was requested while it was read.
std::string read_text_file(const std::string& path);

// The bytes of a file of token ids (--tokens), or standard input for "-": read by the same
// rules as a text (regular file, kMaxTextBytes, no terminal), not checked as UTF-8 (the parser,
// common/token_ids.h, names the first byte that is no id). "tokens file 'x'" in messages.
std::string read_tokens_file(const std::string& path);
// How messages name token ids read from standard input.
inline constexpr const char* kTokensOnStdin = "standard input (--tokens -)";

// The first `needed` tokens of `text` as the whole text tokenizes (all of them when needed is
// 0), BOS first when the model asks for one. Only a prefix is tokenized when that is enough:
// its first `needed` tokens are used once a prefix half again as long gives the same ones (a cut
// at a line break moves only the tokens next to it). InputError when a text of more than
// kMaxWholeTokenizeBytes must be tokenized whole.
std::vector<int32_t> tokenize_text(const engine::Model& model, const std::string& text,
                                   size_t needed);

// The text as a run tokenizes it: `text` itself, or with `skip` (--skip-unencodable) `text`
// without the lines `model`'s vocabulary cannot encode (one without byte fallback has no token
// for some characters), each dropped whole with its line break. `dropped` counts them; a
// progress line says how many when some were. InputError when every line is dropped.
std::string encodable_text(const engine::Model& model, const std::string& text, bool skip,
                           const std::function<void(const std::string&)>& progress,
                           size_t* dropped = nullptr);

// Tokens as diff reads them: cut into whole chunks (at most max_chunks when > 0), each chunk's
// first token replaced by BOS when the model adds one (llama-perplexity's convention; a model
// without a BOS keeps it). InputError "<what> has N tokens, fewer than one chunk of C" when not
// even one chunk fits.
std::vector<std::vector<int32_t>> cut_chunks(const engine::Model& model,
                                             const std::vector<int32_t>& tokens, int chunk,
                                             int max_chunks, const std::string& what);

// A text as diff reads it: tokenized as far as the chunks need, then cut_chunks.
std::vector<std::vector<int32_t>> chunk_text(const engine::Model& model, const std::string& text,
                                             int chunk, int max_chunks);

}  // namespace hd::run
