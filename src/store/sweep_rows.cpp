// A sweep's rows: storing a chunk in its tables with its hash, the hash resume and verify
// check, and the bitwise comparison of a recomputed chunk (reading: sweep_rows_read.cpp).
#include "store/sweep_rows.h"

#include <fmt/format.h>

#include <cstring>

#include "common/sha256.h"
#include "store/experiment.h"
#include "store/experiment_detail.h"
#include "store/sqlite.h"
#include "store/sweep_rows_detail.h"

namespace hd::store {

bool detail::has_table(Database& db, const char* name) {
  Statement q(db.handle(), "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  q.bind(1, std::string_view(name));
  return q.step();
}

std::string detail::sweep_rows_hash_key(int chunk) {
  return "sweep_rows_sha256/" + std::to_string(chunk);
}

// The kind and configuration, then every column of the chunk's rows of each sweep table in key
// order, in the tagged encoding of the integrity hash.
std::string detail::sweep_rows_sha256(Database& db, const Experiment& e, int chunk) {
  return unit_sha256(e, [&](Sha256& md) {
    for (const auto& t : kSweepTables) {
      if (!has_table(db, t.name)) continue;
      Statement q(db.handle(),
                  fmt::format("SELECT * FROM {} WHERE chunk = ? ORDER BY {}", t.name, t.order));
      q.bind(1, int64_t{chunk});
      hash_rows(md, q);
    }
  });
}

namespace {

void put_arm(Statement& pos, Statement& flips, int chunk, const char* comparison, int64_t mask,
             int first_pos, const SweepArmRows& r) {
  for (size_t i = 0; i < r.kl.size(); ++i) {
    pos.bind(1, int64_t{chunk}).bind(2, std::string_view(comparison)).bind(3, mask);
    pos.bind(4, static_cast<int64_t>(first_pos) + static_cast<int64_t>(i));
    pos.bind(5, r.kl[i]).bind(6, r.nll[i]).run();
  }
  flips.bind(1, int64_t{chunk}).bind(2, std::string_view(comparison)).bind(3, mask);
  flips.bind(4, r.flips).run();
}

}  // namespace

void Experiment::put_sweep_chunk(const SweepChunkRows& r) {
  Transaction t(*db_);
  for (const auto& table : detail::kSweepTables) db_->exec(table.ddl);
  // Rows of the chunk without a hash (edited in by hand) give way to these.
  for (const auto& table : detail::kSweepTables) {
    Statement(db_->handle(), fmt::format("DELETE FROM {} WHERE chunk = ?", table.name))
        .bind(1, int64_t{r.chunk})
        .run();
  }

  Statement pos(db_->handle(), "INSERT INTO sweep_positions VALUES (?, ?, ?, ?, ?, ?)");
  Statement flips(db_->handle(), "INSERT INTO sweep_flips VALUES (?, ?, ?, ?)");
  // Mask 0 is A against its own logits: KL 0, A's NLL, no flips.
  const SweepArmRows a{std::vector<double>(r.nll_a.size(), 0.0), r.nll_a, 0};
  put_arm(pos, flips, r.chunk, "combination", 0, r.first_pos, a);
  for (size_t m = 1; m <= r.combos.size(); ++m) {
    if (r.combos[m - 1]) {
      put_arm(pos, flips, r.chunk, "combination", static_cast<int64_t>(m), r.first_pos,
              *r.combos[m - 1]);
    }
  }
  if (r.floor) put_arm(pos, flips, r.chunk, "floor", 0, r.first_pos, *r.floor);
  if (r.floor_b) put_arm(pos, flips, r.chunk, "floor_b", 0, r.first_pos, *r.floor_b);
  set_meta(detail::sweep_rows_hash_key(r.chunk), detail::sweep_rows_sha256(*db_, *this, r.chunk));
  t.commit();
}

std::optional<std::string> Experiment::sweep_chunk_altered(int chunk) const {
  const auto changed = [&] {
    return "sweep chunk " + std::to_string(chunk) + " was changed after it was stored";
  };
  const auto recorded = meta(detail::sweep_rows_hash_key(chunk));
  if (!recorded || *recorded != detail::sweep_rows_sha256(*db_, *this, chunk)) return changed();
  return std::nullopt;
}

namespace {

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

std::optional<std::string> arm_difference(const std::string& arm, int first_pos,
                                          const std::optional<SweepArmRows>& s,
                                          const std::optional<SweepArmRows>& r) {
  if (s.has_value() != r.has_value())
    return arm + (s ? " is stored, not recomputed" : " is not stored");
  if (!s) return std::nullopt;
  for (const auto* column : {"kl", "nll"}) {
    const auto& xs = std::string_view(column) == "kl" ? s->kl : s->nll;
    const auto& ys = std::string_view(column) == "kl" ? r->kl : r->nll;
    if (xs.size() != ys.size())
      return fmt::format("{}: {} stored positions, {} recomputed", arm, xs.size(), ys.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!same_bits(xs[i], ys[i])) {
        return fmt::format("{} pos {} {}: stored {:.17g}, recomputed {:.17g}", arm,
                           first_pos + static_cast<int>(i), column, xs[i], ys[i]);
      }
    }
  }
  if (s->flips != r->flips)
    return fmt::format("{} flips: stored {}, recomputed {}", arm, s->flips, r->flips);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> sweep_rows_difference(const SweepChunkRows& s, const SweepChunkRows& r) {
  if (s.first_pos != r.first_pos || s.combos.size() != r.combos.size())
    return std::string("the rows cover other positions or combinations");
  const auto a = [](const SweepChunkRows& c) {
    return std::optional<SweepArmRows>(SweepArmRows{c.nll_a, c.nll_a, 0});
  };
  if (auto d = arm_difference("A (nll_a)", s.first_pos, a(s), a(r))) return d;
  for (size_t m = 1; m <= s.combos.size(); ++m) {
    const std::string arm = "mask " + std::to_string(m);
    if (auto d = arm_difference(arm, s.first_pos, s.combos[m - 1], r.combos[m - 1])) return d;
  }
  if (auto d = arm_difference("the floor", s.first_pos, s.floor, r.floor)) return d;
  return arm_difference("B's floor", s.first_pos, s.floor_b, r.floor_b);
}

}  // namespace hd::store
