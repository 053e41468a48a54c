// This process's resident pages of a file it maps (llama.cpp maps a model file whole).
#pragma once
#include <cstddef>
#include <string>

namespace hd::engine {

// Bytes of `path`'s mappings resident in this process (/proc/self/smaps).
size_t mapped_resident_bytes(const std::string& path);

// Drops this process's resident pages of every mapping of `path` (madvise MADV_DONTNEED).
// llama.cpp reads the tensors it repacks for the CPU (Q4_0, Q4_K, IQ4_NL, …) out of the mapping
// into buffers of their own; the mapping's pages then stay resident, the weights counted twice,
// though nothing reads them again. A page a pass does read from the mapping comes back from the
// page cache on first touch: the mapping is shared, read-only and clean, so nothing is lost.
void release_mapped_pages(const std::string& path);

// Makes every page of `path`'s read-only mappings resident again in one call (madvise
// MADV_POPULATE_READ, Linux 5.14): from the page cache that is about what llama.cpp's
// MAP_POPULATE cost at load, where faulting them in one by one on the first pass cost ≈ 1.5 s
// per 1.2 GB here. On an older kernel it does nothing and the pages fault in on use.
void populate_mapped_pages(const std::string& path);

}  // namespace hd::engine
