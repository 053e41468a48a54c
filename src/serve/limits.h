// Every bound serve puts on what one request may ask of it (docs/serve.md, "Limits"). Going over
// one is a refusal with one line, never a slowdown for everyone else.
#pragma once
#include <chrono>
#include <cstddef>

namespace hd::serve::limits {

// A request body: a form with a pasted text. 4 MiB is several times the text the largest run
// allowed below can read (~1 MB at 4-8 bytes a token); more would only sit on disk unread.
constexpr size_t kMaxBodyBytes = size_t{4} << 20;

// Runs waiting for the one that runs: enough for an afternoon's queue of a person clicking, not
// for a script that fills the disk with pasted texts.
constexpr size_t kMaxQueuedRuns = 16;
// Finished runs /api/runs still lists (older ones drop off the list; their files stay).
constexpr size_t kMaxFinishedRunsListed = 100;

// One run from the page: at most this many chunks, and chunk x chunks at most this many tokens
// (1,024 chunks of 128). Longer runs are for `heterodyne diff` in a terminal.
constexpr long kMaxChunksPerRun = 1024;
constexpr long kMaxTokensPerRun = 131072;

// Result documents and downloads kept ready to send (encoded_body.h), all encodings together;
// the least recently asked for go first. A 4,000-chunk run's result is about 100 MB plain.
constexpr size_t kMaxCachedBodyBytes = size_t{256} << 20;

}  // namespace hd::serve::limits
