// What a long command reports while it works: a struct, so that the CLI can print it for a
// person (the text) and `serve` can read it from its child as JSON lines (every field), never
// by parsing the text.
#pragma once
#include <cmath>
#include <functional>
#include <string>

namespace hd {

struct Progress {
  enum class Event {
    kNote,   // a line for the reader, nothing to count
    kChunk,  // a chunk (or a run of an exploration) finished: `done` of `total`
    kPass,   // a long chunk is under way: patched pass `pass` of `passes`
    kResult, // what the command was run to find out (verify's verdict): stdout, for scripts
  };
  Event event = Event::kNote;
  std::string text;  // what a person reads; always set
  int done = 0, total = 0;
  int pass = 0, passes = 0;
  double seconds = NAN;       // kChunk: the chunk's wall time
  double seconds_left = NAN;     // kPass, kChunk: the estimate for the whole run
  double seconds_elapsed = NAN;  // kPass, kChunk: since this process started the run
  double mean_kl = NAN;       // kChunk of a diff: the chunk's mean KL

  // A note, so that `progress("text")` keeps reading as a line.
  Progress(std::string line) : text(std::move(line)) {}  // NOLINT(google-explicit-constructor)
  Progress(const char* line) : text(line) {}             // NOLINT(google-explicit-constructor)
  static Progress result(std::string text) {
    Progress p(std::move(text));
    p.event = Event::kResult;
    return p;
  }
  static Progress chunk(int done, int total, std::string text) {
    Progress p(std::move(text));
    p.event = Event::kChunk;
    p.done = done;
    p.total = total;
    return p;
  }
};

using ProgressFn = std::function<void(const Progress&)>;

// What is left of a run of like units (chunks), from the mean time of the last few: one slow
// or fast unit moves the estimate by a fraction of itself, not all of it, and a run that
// speeds up or slows down is followed within a window.
class TimeLeft {
 public:
  static constexpr int kWindow = 8;
  void unit_done(double seconds);
  // Seconds per unit, the mean of the last kWindow; NaN before the first.
  double per_unit() const;
  // per_unit() times `units`, and NaN before the first unit.
  double left(int units) const { return per_unit() * units; }

 private:
  double last_[kWindow] = {};
  int n_ = 0;
};

// "1:05" (m:ss), "1:02:05" past an hour: how long, for a person.
std::string duration_text(double seconds);

// One line of JSON, no newline: {"event":"chunk","done":3,"total":8,...,"text":"..."}; fields
// that do not apply (NaN, or counts of a note) are left out.
std::string progress_json(const Progress& p);

}  // namespace hd
