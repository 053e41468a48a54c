// The kinds of experiment a file can hold. Each layer that treats kinds differently keeps one
// table indexed by this enum (kVerifiers in run/verify.cpp: verify; kViews in
// report/experiment_views.cpp: show, JSON, the HTML report, serve's list and result view), so a
// new kind is added to the enum and to each table, and nowhere else; a file's kind is read here
// once, never compared as a string.
#pragma once
#include <array>
#include <string>
#include <string_view>

namespace hd::store {

class Experiment;

enum class Kind { kDiff, kSweep, kFloor, kRecommend };
inline constexpr size_t kKindCount = 4;

struct KindInfo {
  Kind kind;
  std::string_view name;     // meta "kind"
  std::string_view command;  // the command that writes it and, with --resume, finishes it
};

// Every kind, in enum order.
const std::array<KindInfo, kKindCount>& experiment_kinds();
const KindInfo& kind_info(Kind k);

// The file's kind: meta "kind", "diff" when absent (files from before there were other kinds);
// InputError for a kind this heterodyne does not know.
Kind kind_of(const Experiment& e);

// Writes the file's kind (meta "kind").
void set_kind(Experiment& e, Kind k);

// InputError unless the file holds an experiment of kind k ("'F' is a sweep, not a diff").
void require_kind(const Experiment& e, Kind k);

// What to do with a file whose run has not finished: "finish it with heterodyne diff --resume
// FILE" (every kind resumes).
std::string finish_hint(Kind k, const std::string& path);

}  // namespace hd::store
