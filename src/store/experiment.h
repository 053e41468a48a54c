// An experiment file: configuration, provenance and every stored number of one run.
// Layout: docs/experiment-format.md. One writer at a time (an exclusive lock on the file);
// any number of readers.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/records.h"

namespace hd::store {

class Database;

inline constexpr int kSchemaVersion = 1;

class Experiment {
 public:
  // A new file (refuses to replace an existing one unless `replace`), for writing.
  static Experiment create(const std::string& path, bool replace);
  // What create() would refuse, checked before any work is done. Throws InputError.
  static void check_creatable(const std::string& path, bool replace);
  // An existing file; `writable` takes the writer's lock (refused while another holds it).
  static Experiment open(const std::string& path, bool writable);

  Experiment(Experiment&&) noexcept;
  ~Experiment();

  const std::string& path() const { return path_; }

  void set_meta(const std::string& key, const std::string& value);
  std::optional<std::string> meta(const std::string& key) const;
  // The value, or InputError naming the file when a run was stopped before storing it.
  std::string required_meta(const std::string& key) const;

  // Stores one chunk, with the vocabulary pieces of every token it mentions, in one
  // transaction. `pieces` maps token id to its text.
  void put_chunk(const analysis::ChunkResult& chunk, const std::map<int32_t, std::string>& pieces);
  std::vector<int> finished_chunks() const;
  analysis::ChunkResult read_chunk(int chunk) const;
  std::vector<analysis::ChunkResult> read_all() const;
  std::map<int32_t, std::string> pieces() const;

  // SHA-256 over the canonical serialization of every stored value but the hash itself.
  std::string compute_integrity() const;
  // Records the hash and marks the run complete.
  void seal();

 private:
  Experiment(std::string path, std::unique_ptr<Database> db, int lock_fd);
  std::string path_;
  std::unique_ptr<Database> db_;
  int lock_fd_ = -1;
};

}  // namespace hd::store
