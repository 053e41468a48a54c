// splitmix64: a tiny, fully specified 64-bit generator. Integer arithmetic only, so every
// platform draws the same sequence from the same seed (model init, training windows).
#pragma once
#include <cstdint>

namespace hd {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace hd
