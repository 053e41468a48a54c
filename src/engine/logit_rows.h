// A row of logits as llama.cpp wrote it, checked before anything reads it: NaN and +inf mean
// broken numbers (refused, naming the position); -inf is a token the model masks.
#pragma once
#include <cstddef>
#include <string>

namespace hd::engine {

// One position's row of logits into `dst`, refusing NaN, +inf and a row of -inf alone.
void copy_logits(const float* row, float* dst, size_t n_vocab, const std::string& model, int pos);
// copy_logits without the copy: a row read where llama.cpp wrote it.
void check_logits(const float* row, size_t n_vocab, const std::string& model, int pos);

}  // namespace hd::engine
