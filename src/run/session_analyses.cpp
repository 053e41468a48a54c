// The plug-in analyses of a session (analysis/plugin.h): what each chunk gives them, and the
// reruns with points written that an intervention asks for.
#include <fmt/format.h>

#include "errors.h"
#include "run/session.h"

namespace hd::run {

using analysis::ChunkResult;

// Every plug-in sees the chunk as the diff computed it (before transplants reuse buffers).
void Session::run_analyses(ChunkResult& r, std::span<const int32_t> tokens, int first_output) {
  if (analyses_.empty()) return;
  analysis::ChunkInput in;
  in.chunk = r.chunk;
  in.tokens = tokens;
  in.first_output = first_output;
  in.n_vocab = a_.arm->model_info().n_vocab;
  in.logits_a = a_.logits;
  in.logits_b = b_.logits;
  in.diff = &r.diff;
  in.floor = r.floor ? &*r.floor : nullptr;
  in.floor_b = r.floor_b ? &*r.floor_b : nullptr;
  in.points = &model_points_;
  in.captured = [this, &r](char arm, const std::string& point) {
    const ArmRun& from = arm == 'a' ? a_ : arm == 'b' ? b_ : arm == 'g' ? floors_.b() : floors_.a();
    // A chunk outside the floor's sample has no floor rows: the floor arms still hold those of
    // the last chunk that had them.
    const bool floor_arm = arm != 'a' && arm != 'b';
    if (!from.present() || (floor_arm && !r.floor)) return analysis::ChunkInput::Rows{};
    return analysis::ChunkInput::Rows{from.hook.captured(point), from.hook.width(point),
                                      static_cast<int>(from.hook.first_row(point))};
  };
  in.rerun = [&](char target, const std::vector<std::string>& points) {
    return rerun(target, points, tokens, first_output);
  };
  in.rewrite_own = [&](char arm, const std::string& into, const std::string& from) {
    return rewrite_own(arm, into, from, tokens, first_output);
  };
  for (const auto* a : analyses_) {
    same_widths(a->points(model_points_));
    auto rows = a->compute(in);
    const auto columns = a->columns();
    for (const auto& row : rows) {
      if (!analysis::row_fits(columns, row)) {
        throw RuntimeError("analysis '" + a->name() + "' returned a row that does not fit its "
                           "columns (a bug in the analysis)");
      }
    }
    r.analyses[a->name()] = std::move(rows);
  }
}

// An analysis compares the arms point by point: B (or the floor) must have A's shape there (a
// MoE model with other expert counts does not).
void Session::same_widths(const std::vector<std::string>& points) const {
  for (const std::string& p : points) {
    for (const ArmRun* r : {&b_, &floors_.a()}) {
      if (!r->present() || r->hook.width(p) == a_.hook.width(p)) continue;
      throw InputError(fmt::format(
          "graph point '{}' is {} wide in arm {} and {} wide in A: the arms route to different "
          "numbers of experts, which the routing analyses cannot compare",
          p, r->hook.width(p), r == &b_ ? "B" : "floor", a_.hook.width(p)));
    }
  }
}

std::span<const float> Session::rerun(char target, const std::vector<std::string>& points,
                                      std::span<const int32_t> tokens, int first_output) {
  ArmRun& to = target == 'a' ? a_ : b_;
  const ArmRun& from = target == 'a' ? b_ : a_;
  engine::Hook patch;
  engine::tell_rows(map_, patch);
  for (const std::string& p : points) {
    patch.overwrite(p, from.hook.first_row(p), from.hook.captured(p));
  }
  return run_patched(to, patch, tokens, first_output);
}

std::span<const float> Session::run_patched(ArmRun& to, engine::Hook& patch,
                                            std::span<const int32_t> tokens, int first_output) {
  // The points the arm's own pass asks for too: the scheduler cuts the graph at every node
  // asked for, and a backend that fuses kernels would otherwise fuse the rerun differently.
  for (const std::string& p : to.hook.captures()) patch.capture(p);
  return to.arm->run_chunk_view(tokens, &patch, first_output);
}

std::span<const float> Session::rewrite_own(char arm, const std::string& into,
                                            const std::string& from,
                                            std::span<const int32_t> tokens, int first_output) {
  ArmRun& to = arm == 'a' ? a_ : b_;
  const int64_t w = to.hook.width(from);
  if (to.hook.width(into) != w) {
    throw RuntimeError(fmt::format("graph point '{}' is {} wide and '{}' {}: one cannot be "
                                   "written with the other's rows",
                                   into, to.hook.width(into), from, w));
  }
  // `into` may keep fewer rows than `from` (the last layer: the output positions only): the
  // rows of `from` at the positions `into` keeps.
  const int64_t skip = to.hook.first_row(into) - to.hook.first_row(from);
  if (skip < 0) {
    throw RuntimeError("graph point '" + into + "' keeps rows that '" + from + "' has not");
  }
  const auto& rows = to.hook.captured(from);
  engine::Hook patch;
  engine::tell_rows(map_, patch);
  patch.overwrite(into, to.hook.first_row(into),
                  std::span<const float>(rows).subspan(static_cast<size_t>(skip * w)));
  return run_patched(to, patch, tokens, first_output);
}

}  // namespace hd::run
