// What the writer and the reader of a sweep's rows share; not for use outside store/.
#pragma once
#include <string>

namespace hd::store {

class Database;
class Experiment;

namespace detail {

// The meta key of a chunk's hash.
std::string sweep_rows_hash_key(int chunk);

// What sweep_rows_hash_key records for `chunk`: its rows as they are now in the file.
std::string sweep_rows_sha256(Database& db, const Experiment& e, int chunk);

}  // namespace detail
}  // namespace hd::store
