#include "store/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/input_file.h"
#include "common/output_file.h"
#include "errors.h"

namespace hd::store {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors is little-endian");

constexpr uint64_t kMaxHeader = uint64_t{100} << 20;

uint64_t element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw InputError("negative dimension in a tensor shape");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

}  // namespace

std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !seen.insert(t.name).second) {
      throw InputError("tensor name '" + t.name + "' is empty, reserved or used twice");
    }
    if (element_count(t.shape) != t.data.size()) {
      throw InputError("tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
                       " values for its shape");
    }
    const uint64_t bytes = t.data.size() * sizeof(float);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::string out(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  out += json;
  out.reserve(out.size() + offset);
  for (const NamedTensor& t : tensors) {
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  }
  return out;
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       const OutputPolicy& policy) {
  write_output_file(path, safetensors_bytes(tensors, metadata), policy);
}

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return InputError("'" + what + "' is not a valid safetensors file: " + why);
  };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeader || n > bytes.size() - 8)
    throw bad("header length " + std::to_string(n) + " is past the end");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  } catch (const std::exception&) {
    throw bad("the header is not JSON");
  }
  if (!header.is_object()) throw bad("the header is not a JSON object");
  SafetensorsFile f;
  struct Entry {
    uint64_t begin, end;
    NamedTensor t;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw bad("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw bad("__metadata__ values must be strings");
        f.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json& e = *it;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
        !e.contains("data_offsets")) {
      throw bad("tensor '" + it.key() + "' lacks dtype, shape or data_offsets");
    }
    if (e["dtype"] != "F32") throw bad("tensor '" + it.key() + "' is not F32");
    Entry en;
    en.t.name = it.key();
    try {
      en.t.shape = e["shape"].get<std::vector<int64_t>>();
      const auto off = e["data_offsets"].get<std::vector<uint64_t>>();
      if (off.size() != 2 || off[0] > off[1]) throw std::invalid_argument("offsets");
      en.begin = off[0];
      en.end = off[1];
      if (element_count(en.t.shape) * sizeof(float) != en.end - en.begin)
        throw std::invalid_argument("size");
    } catch (const std::exception&) {
      throw bad("tensor '" + it.key() + "' has an inconsistent shape or data_offsets");
    }
    entries.push_back(std::move(en));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  const uint64_t data_size = bytes.size() - 8 - n;
  uint64_t expect = 0;
  for (Entry& en : entries) {
    if (en.begin != expect)
      throw bad("tensor '" + en.t.name + "' does not start where the previous one ends");
    if (en.end > data_size) throw bad("tensor '" + en.t.name + "' runs past the end of the file");
    en.t.data.resize((en.end - en.begin) / sizeof(float));
    std::memcpy(en.t.data.data(), bytes.data() + 8 + n + en.begin, en.end - en.begin);
    expect = en.end;
    f.tensors.push_back(std::move(en.t));
  }
  if (expect != data_size) throw bad("bytes after the last tensor");
  return f;
}

SafetensorsFile read_safetensors(const std::string& path) {
  refuse_special_file(path, "safetensors file");  // a FIFO would block the read forever
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_safetensors(ss.str(), path);
}

}  // namespace hd::store
