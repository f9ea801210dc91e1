// A GGUF v3 file written in memory for tests: metadata, tensor infos, and a data region that is
// zeros (or only declared: `header()` gives the bytes up to the data, for a parser told the
// file size).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vramplan_test {

struct GgufTestWriter {
  std::string kvs;
  std::string infos;
  std::uint64_t n_kvs = 0;
  std::uint64_t n_tensors = 0;
  std::int64_t data_bytes = 0;

  static void u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  static void u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  static void str(std::string& out, const std::string& s) {
    u64(out, s.size());
    out += s;
  }
  void kv_u32(const std::string& key, std::uint32_t v) {
    str(kvs, key);
    u32(kvs, 4);  // UINT32
    u32(kvs, v);
    ++n_kvs;
  }
  void kv_str(const std::string& key, const std::string& v) {
    str(kvs, key);
    u32(kvs, 8);  // STRING
    str(kvs, v);
    ++n_kvs;
  }
  // dims innermost first (ne0, ne1, ...); `bytes` as the test computes them.
  void tensor(const std::string& name, const std::vector<std::uint64_t>& ne, std::uint32_t type,
              std::int64_t bytes) {
    str(infos, name);
    u32(infos, static_cast<std::uint32_t>(ne.size()));
    for (const std::uint64_t n : ne) u64(infos, n);
    u32(infos, type);
    u64(infos, static_cast<std::uint64_t>(data_bytes));
    data_bytes += (bytes + 31) / 32 * 32;  // general.alignment 32
    ++n_tensors;
  }
  // A vector (ne1 == 0) or a matrix.
  void tensor(const std::string& name, std::uint64_t ne0, std::uint64_t ne1, std::uint32_t type,
              std::int64_t bytes) {
    tensor(name, ne1 == 0 ? std::vector<std::uint64_t>{ne0} : std::vector<std::uint64_t>{ne0, ne1},
           type, bytes);
  }
  // The bytes before the data region, padded to the alignment.
  std::string header() const {
    std::string out = "GGUF";
    u32(out, 3);
    u64(out, n_tensors);
    u64(out, n_kvs);
    out += kvs + infos;
    out.resize((out.size() + 31) / 32 * 32, '\0');
    return out;
  }
  // The whole file, the data region zeros.
  std::string bytes() const {
    std::string out = header();
    out.resize(out.size() + static_cast<std::size_t>(data_bytes), '\0');
    return out;
  }
};

}  // namespace vramplan_test
