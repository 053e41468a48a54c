// The text a run reads, and its tokens: read from a regular file (never a FIFO or device),
// checked as strict UTF-8, bounded in size, and tokenized only as far as the run needs.
#pragma once
#include <cstddef>
#include <cstdint>
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

// The whole file. InputError: missing, a directory, not a regular file, empty, larger than
// kMaxTextBytes, not UTF-8; RuntimeError when a stop was requested while it was read.
std::string read_text_file(const std::string& path);

// The first `needed` tokens of `text` as the whole text tokenizes (all of them when needed is
// 0), BOS first when the model asks for one. Only a prefix is tokenized when that is enough:
// its first `needed` tokens are used once a prefix half again as long gives the same ones (a cut
// at a line break moves only the tokens next to it). InputError when a text of more than
// kMaxWholeTokenizeBytes must be tokenized whole.
std::vector<int32_t> tokenize_text(const engine::Model& model, const std::string& text,
                                   size_t needed);

// A text as diff reads it: cut into whole chunks (at most max_chunks when > 0), each chunk's
// first token replaced by BOS (llama-perplexity's convention). InputError when not even one
// chunk fits.
std::vector<std::vector<int32_t>> chunk_text(const engine::Model& model, const std::string& text,
                                             int chunk, int max_chunks);

}  // namespace hd::run
