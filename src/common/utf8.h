// Strict UTF-8 (RFC 3629): what heterodyne accepts as text, in files and on its command line.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hd {

// The offset of the first byte that does not begin a well-formed UTF-8 sequence, or nullopt
// when all of `s` is well formed. Refused: stray continuation bytes, truncated sequences,
// overlong encodings (C0, C1, E0 80..9F, F0 80..8F), UTF-16 surrogates (ED A0..BF) and code
// points above U+10FFFF (F4 90.., F5..FF).
std::optional<size_t> first_invalid_utf8(std::string_view s);

// `s` with every byte that does not begin a well-formed sequence written as \xHH (upper-case
// hex): valid UTF-8 that keeps every byte (a byte token's piece, half a character).
std::string escape_invalid_utf8(std::string_view s);

// `s` as a one-line message may quote it: invalid UTF-8 as above, and control bytes (a NUL,
// a line break, an escape sequence) as \xHH too, so that nothing after them is lost or drawn;
// cut after `max` bytes of the input with "…".
std::string printable(std::string_view s, size_t max = 200);

}  // namespace hd
