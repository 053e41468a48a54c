// Byte-pair encoding over words, the words split the way code and prose break naturally: a word
// is a run of letters/digits or a run of punctuation, with the line breaks and indentation before
// it ("\n    return", "\n    });"). Code is mostly such runs, so pieces grow long and each token
// carries more text. llama.cpp's tokenizer does not pre-split; it merges by score wherever a
// piece exists, so use may segment a little differently from training, which is harmless: the
// model is trained on llama.cpp's own tokenization.
#include "demo/vocabulary.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "errors.h"

namespace hd::demo {
namespace {

constexpr int kControlTokens = 3;  // <unk> <s> </s>
constexpr int kByteTokens = 256;

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xe) return 3;
  if ((lead >> 3) == 0x1e) return 4;
  return 1;  // not a lead byte: treat as a lone byte (falls back to <0xXX>)
}

// The text as SentencePiece sees it: one string per character, spaces as U+2581.
std::vector<std::string> characters(std::string_view text) {
  std::vector<std::string> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(utf8_length(static_cast<unsigned char>(text[i])), text.size() - i);
    if (n == 1 && text[i] == ' ') {
      out.emplace_back(kSpaceMarker);
    } else {
      out.emplace_back(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

enum class CharClass { kNewline, kSpace, kWord, kPunct, kOther };

CharClass classify(const std::string& c) {
  if (c == kSpaceMarker) return CharClass::kSpace;
  const unsigned char b = static_cast<unsigned char>(c[0]);
  if (b >= 0x80 || std::isalnum(b) || b == '_') return CharClass::kWord;
  if (c == "\n") return CharClass::kNewline;
  if (std::ispunct(b)) return CharClass::kPunct;
  return CharClass::kOther;  // tabs and other controls stand alone
}

struct PairHash {
  size_t operator()(uint64_t p) const { return std::hash<uint64_t>()(p * 0x9e3779b97f4a7c15ULL); }
};

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class Learner {
 public:
  explicit Learner(Vocabulary& vocab) : vocab_(vocab) {
    for (size_t i = 0; i < vocab_.tokens.size(); ++i) {
      id_of_[vocab_.tokens[i]] = static_cast<int32_t>(i);
    }
  }

  // Splits the character stream into words of alphabet symbols; characters outside the
  // alphabet end a word and take no part in merges (they will be bytes).
  void add_words(const std::vector<std::string>& chars) {
    std::map<std::vector<int32_t>, int64_t> counts;
    std::vector<int32_t> word;
    CharClass prev = CharClass::kOther;
    auto flush = [&] {
      if (word.size() >= 2) ++counts[word];
      word.clear();
    };
    for (const std::string& c : chars) {
      const auto it = id_of_.find(c);
      if (it == id_of_.end()) {
        flush();
        prev = CharClass::kOther;
        continue;
      }
      const CharClass cls = classify(c);
      const bool lead = prev == CharClass::kNewline || prev == CharClass::kSpace;
      const bool joins =
          !word.empty() && ((cls == CharClass::kWord && (prev == CharClass::kWord || lead)) ||
                            (cls == CharClass::kPunct && (prev == CharClass::kPunct || lead)) ||
                            (cls == CharClass::kSpace && lead) ||
                            (cls == CharClass::kNewline && prev == CharClass::kNewline));
      if (!joins) flush();
      word.push_back(it->second);
      prev = cls;
    }
    flush();
    for (auto& [w, n] : counts) {
      words_.push_back(w);
      weights_.push_back(n);
    }
    for (size_t w = 0; w < words_.size(); ++w) count_pairs(w, +1);
  }

  // One merge: the most frequent pair (ties: the smaller concatenated text). False when no
  // pair occurs twice.
  bool merge_best(int32_t& merged_id, bool& is_new) {
    uint64_t best = 0;
    int64_t best_count = 1;
    std::string best_text;
    std::unordered_map<std::string, int32_t>::const_iterator found;
    for (;;) {
      best_count = 1;
      best_text.clear();
      for (const auto& [key, count] : pair_counts_) {
        if (count < best_count || banned_.count(key)) continue;
        const std::string text = pair_text(key);
        if (count > best_count || text < best_text) {
          best = key;
          best_count = count;
          best_text = text;
        }
      }
      if (best_count < 2) return false;
      found = id_of_.find(best_text);
      // "<s>" or "<0x41>" spelled out in the text must not merge into the control or byte token
      // of that name: it would detokenize to something else.
      if (found == id_of_.end() || vocab_.types[found->second] == kNormal) break;
      banned_.insert(best);
    }
    is_new = found == id_of_.end();
    if (is_new) {
      merged_id = static_cast<int32_t>(vocab_.tokens.size());
      vocab_.tokens.push_back(best_text);
      vocab_.scores.push_back(0.0f);  // set by the caller from the merge rank
      vocab_.types.push_back(kNormal);
      id_of_[best_text] = merged_id;
    } else {
      merged_id = found->second;
    }
    apply(best, merged_id);
    return true;
  }

 private:
  std::string pair_text(uint64_t key) const {
    return vocab_.tokens[key >> 32] + vocab_.tokens[key & 0xffffffffu];
  }

  void count_pairs(size_t w, int sign) {
    const std::vector<int32_t>& s = words_[w];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t key = pair_key(s[i], s[i + 1]);
      int64_t& c = pair_counts_[key];
      c += sign * weights_[w];
      if (c == 0) pair_counts_.erase(key);
      if (sign > 0) where_[key].insert(w);
    }
  }

  void apply(uint64_t key, int32_t merged) {
    const int32_t a = static_cast<int32_t>(key >> 32);
    const int32_t b = static_cast<int32_t>(key & 0xffffffffu);
    const std::set<size_t> affected = std::move(where_[key]);
    where_.erase(key);
    for (size_t w : affected) {
      std::vector<int32_t>& s = words_[w];
      count_pairs(w, -1);
      std::vector<int32_t> out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      s = std::move(out);
      count_pairs(w, +1);
    }
  }

  Vocabulary& vocab_;
  std::unordered_map<std::string, int32_t> id_of_;
  std::vector<std::vector<int32_t>> words_;
  std::vector<int64_t> weights_;
  std::unordered_map<uint64_t, int64_t, PairHash> pair_counts_;
  std::unordered_map<uint64_t, std::set<size_t>, PairHash> where_;
  std::unordered_set<uint64_t, PairHash> banned_;
};

void add_fixed_tokens(Vocabulary& v) {
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {kUnknown, kControl, kControl};
  v.scores = {0.0f, 0.0f, 0.0f};
  for (int b = 0; b < kByteTokens; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.tokens.emplace_back(name);
    v.types.push_back(kByte);
    v.scores.push_back(0.0f);
  }
}

// The alphabet: every character seen at least min_count times, most frequent first.
std::vector<std::string> alphabet(const std::vector<std::string>& chars, int min_count) {
  std::unordered_map<std::string, int64_t> counts;
  for (const std::string& c : chars) ++counts[c];
  std::vector<std::pair<int64_t, std::string>> kept;
  for (const auto& [c, n] : counts) {
    // A lone non-lead byte or control byte is better left to byte fallback.
    const unsigned char b = static_cast<unsigned char>(c[0]);
    const bool printable = b >= 0x20 || c == "\n" || c == "\t";
    if (n >= min_count && printable && !(c.size() == 1 && b >= 0x80)) kept.emplace_back(-n, c);
  }
  std::sort(kept.begin(), kept.end());
  std::vector<std::string> out;
  for (auto& [n, c] : kept) out.push_back(c);
  return out;
}

}  // namespace

Vocabulary learn_vocabulary(std::string_view text, const VocabularySettings& settings) {
  if (settings.size < kControlTokens + kByteTokens + 1) {
    throw InputError("vocabulary size " + std::to_string(settings.size) +
                     " leaves no room beyond " + std::to_string(kControlTokens + kByteTokens) +
                     " control and byte tokens");
  }
  Vocabulary v;
  add_fixed_tokens(v);
  const std::vector<std::string> chars = characters(text);
  for (const std::string& c : alphabet(chars, std::max(1, settings.min_char_count))) {
    if (static_cast<int>(v.tokens.size()) >= settings.size) break;
    v.tokens.push_back(c);
    v.types.push_back(kNormal);
    v.scores.push_back(0.0f);
  }
  const int32_t first_merge = static_cast<int32_t>(v.tokens.size());
  Learner learner(v);
  learner.add_words(chars);
  int rank = 0;
  while (static_cast<int>(v.tokens.size()) < settings.size) {
    int32_t id = 0;
    bool is_new = false;
    if (!learner.merge_best(id, is_new)) break;
    // Earlier merges score higher, so llama.cpp's highest-score-first loop replays them in order.
    if (is_new) v.scores[id] = -static_cast<float>(rank);
    ++rank;
  }
  // Single characters are never the result of a merge; they score below every merge.
  for (int32_t i = kControlTokens + kByteTokens; i < first_merge; ++i) {
    v.scores[i] = -static_cast<float>(rank + (i - kControlTokens - kByteTokens));
  }
  return v;
}

}  // namespace hd::demo
