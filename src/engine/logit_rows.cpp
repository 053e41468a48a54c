#include "engine/logit_rows.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "errors.h"

namespace hd::engine {

// Scans n floats (copying them to dst with kCopy) and returns the index of the first that is NaN
// or +inf, or n. A -inf logit is a token the model masks (probability exactly 0: the qwen3tts
// fixture pads ids 0..1023 of its 4096 with -inf in front of its codec head), which the KL
// handles; every other non-finite value means broken numbers. One pass with no early exit, which
// the compiler vectorizes: a patched pass copies 19M logits at 128 positions of a 152k
// vocabulary, and a test per element with a branch out cost about as much as the copy; a masking
// model stays on that pass. `masked_all` is set where every logit is -inf (no token has any
// probability).
template <bool kCopy>
static size_t scan_until_not_finite(const float* src, float* dst, size_t n, bool& masked_all) {
  constexpr uint32_t kExponent = 0x7f800000u, kMinusInf = 0xff800000u;
  uint32_t broken = 0, finite = 0;
  for (size_t k = 0; k < n; ++k) {
    uint32_t bits;
    std::memcpy(&bits, src + k, sizeof bits);
    if constexpr (kCopy) dst[k] = src[k];
    const uint32_t special = static_cast<uint32_t>((bits & kExponent) == kExponent);
    broken |= special & static_cast<uint32_t>(bits != kMinusInf);
    finite |= special ^ 1u;
  }
  masked_all = finite == 0;
  if (broken == 0) return n;
  size_t k = 0;
  while (k < n && (std::isfinite(src[k]) || src[k] < 0)) ++k;
  return k;
}

// A NaN or +inf logit makes every number downstream meaningless (KL would print as nan): refused
// here, where the position is still known; -inf is a masked token, and a row of nothing else has
// no token to predict.
static void refuse_broken_row(const float* row, size_t k, size_t n_vocab, bool masked_all,
                              const std::string& model, int pos) {
  if (k < n_vocab) {
    throw RuntimeError("'" + model + "' produced a non-finite logit (" + std::to_string(row[k]) +
                       ") at position " + std::to_string(pos) +
                       ": its weights may be corrupt, or a setting overflows");
  }
  // After NaN and +inf, which set no finite bit either: a row of -inf alone is masked_all.
  if (masked_all) {
    throw RuntimeError("'" + model + "' gives every token a logit of -inf at position " +
                       std::to_string(pos) + ": no token has any probability there");
  }
}

void copy_logits(const float* row, float* dst, size_t n_vocab, const std::string& model, int pos) {
  bool masked_all = false;
  const size_t k = scan_until_not_finite<true>(row, dst, n_vocab, masked_all);
  refuse_broken_row(row, k, n_vocab, masked_all, model, pos);
}

void check_logits(const float* row, size_t n_vocab, const std::string& model, int pos) {
  bool masked_all = false;
  const size_t k = scan_until_not_finite<false>(row, nullptr, n_vocab, masked_all);
  refuse_broken_row(row, k, n_vocab, masked_all, model, pos);
}

}  // namespace hd::engine
