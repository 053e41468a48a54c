// The demo model's training text: source code and documentation every installation has — the
// llama.cpp tree heterodyne was built from, plus the Python standard library when present.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace hd::demo {

struct CorpusSettings {
  std::vector<std::string> roots;  // directories searched recursively
  size_t max_train_bytes = size_t{3} << 20;
  size_t max_held_out_bytes = size_t{192} << 10;
  int held_out_every = 8;  // a file whose path hash is 0 modulo this is held out
};

struct Corpus {
  std::string train;
  std::string held_out;  // whole files never seen in training
  int train_files = 0;
  int held_out_files = 0;
  std::string sha256;  // of both texts: the identity a cached model is keyed by
};

// The llama.cpp source tree of this build, and the newest /usr/lib/python3.N that has os.py.
std::vector<std::string> default_corpus_roots();

// Reads *.c *.cc *.cpp *.h *.hpp *.py *.md *.sh *.cmake files of up to 256 KiB, skipping
// .git, models (vocabulary fixtures), tests, caches and site-packages, files that are not UTF-8
// or contain NUL or U+2581 (SentencePiece's space marker would not survive a round trip). Files
// are taken in the order of a hash of their path relative to their root, so the sample mixes
// sources and does not depend on where the roots live. InputError when a root is missing or
// nothing usable is found.
Corpus gather_corpus(const CorpusSettings& settings);

}  // namespace hd::demo
