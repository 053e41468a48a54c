// The length-curve kind's table, length_curve_rows: one row per measured length, stored with
// its hash (meta "length_curve_sha256/<length>") in one transaction.
#pragma once
#include <set>
#include <vector>

#include "kinds/length_curve/length_curve.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

void create_length_curve_table(store::Experiment& e);
void put_length_row(store::Experiment& e, const LengthRow& row);
// Every stored row, by length; InputError for a row of another shape (damage).
std::vector<LengthRow> read_length_rows(const store::Experiment& e);
// The stored lengths, each checked against the hash stored with it: InputError for a row
// changed since, which resume never adds to.
std::set<int> resumable_lengths(const store::Experiment& e);

}  // namespace hd::kinds
