// libFuzzer target: see harness.h (gguf). Seeds: fuzz/corpus/gguf (written by fuzz_gguf_seeds).
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hd::fuzz::gguf(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
