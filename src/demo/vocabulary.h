// A SentencePiece-style vocabulary learned from a corpus, for the demo model.
//
// llama.cpp's SPM tokenizer ("llama" tokenizer model) starts from single UTF-8 characters with
// spaces written as U+2581 and repeatedly merges the adjacent pair whose concatenation is the
// highest-scoring token in the vocabulary; a character that is not a token falls back to its
// bytes (<0xXX>). Byte-pair encoding learned here maps onto that exactly: every merged piece is
// the concatenation of two earlier pieces and scores by merge rank (earlier = higher), so
// llama.cpp replays the merges in the order they were learned. Pure: no llama.cpp here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model_maker.h"

namespace hd::demo {

// llama_token_type values as the GGUF stores them (tokenizer.ggml.token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

using Vocabulary = engine::SpmVocabulary;

struct VocabularySettings {
  int size = 1024;          // total tokens: 3 control + 256 bytes + characters + merges
  int min_char_count = 64;  // a character rarer than this is left to byte fallback
};

// U+2581, the space marker of SentencePiece.
inline constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

// Learns the vocabulary from `text`. Deterministic: ties in pair counts break by the pair's
// text. Throws InputError when the settings leave no room for the fixed tokens.
Vocabulary learn_vocabulary(std::string_view text, const VocabularySettings& settings);

}  // namespace hd::demo
