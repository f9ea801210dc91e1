// Readers for the tensor tables of safetensors and GGUF checkpoints. They read only the
// header region of a file (never the tensor data, never the network) and treat every byte
// as hostile: any malformed input is a vramplan::ParseError naming the file, the byte offset
// and the field, never a crash, a hang or an allocation larger than the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "vramplan/dtype.hpp"

namespace vramplan {

// One tensor as stored in a checkpoint file.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  // Row-major, outermost dimension first (PyTorch order) for both formats. GGUF writes its
  // dims innermost first (ne0, ne1, ...); they are reversed here, so ne0 is shape.back().
  std::vector<std::int64_t> shape;
  // Exact stored bytes: elements x element size, or for GGUF block types rows x row_bytes
  // with row_bytes = (ne0 / block_elements) x block_bytes.
  std::int64_t bytes = 0;
  // Absolute byte offset of the tensor's first byte in its file.
  std::int64_t offset = 0;
};

// ---------------------------------------------------------------------------------------
// safetensors: u64 LE header length N, N bytes of JSON, then the data region.

inline constexpr std::int64_t kSafetensorsMaxHeaderBytes = 100'000'000;  // 100 MB, as upstream

struct SafetensorsHeader {
  std::string file;
  std::int64_t header_bytes = 0;                // bytes before the data region: 8 + N
  std::int64_t file_bytes = 0;                  // size of the whole file
  std::vector<TensorInfo> tensors;              // sorted by offset (file order)
  std::map<std::string, std::string> metadata;  // "__metadata__"
  std::int64_t tensor_bytes() const;            // sum of tensors[i].bytes
};

// Reads the 8-byte length and the JSON header of `path` (symlinks followed); the data region
// is never read.
SafetensorsHeader read_safetensors_header(const std::string& path);

// Pure parser. `bytes` is a prefix of the file that holds at least 8 + N bytes; `file_bytes`
// is the size of the whole file (>= bytes.size()); `name` is used in error messages.
SafetensorsHeader parse_safetensors_header(std::string_view bytes, std::int64_t file_bytes,
                                           const std::string& name);

// All tensors of a safetensors checkpoint folder (e.g. an HF cache snapshot, whose files are
// symlinks into ../../blobs/). With model.safetensors.index.json the shards are the files
// its weight_map names, and the index and the shards must agree tensor by tensor. Without
// one, every *.safetensors file is read, except that a consolidated*.safetensors set beside
// other files (Mistral's duplicate copy) is skipped. A tensor name found in two files is an
// error.
struct CheckpointTensors {
  std::vector<std::string> files;   // the files read, dir/name, sorted
  std::vector<TensorInfo> tensors;  // file by file, each in file order
  std::int64_t total_bytes = 0;     // sum of tensor bytes
};
CheckpointTensors read_safetensors_folder(const std::string& dir);

// ---------------------------------------------------------------------------------------
// GGUF v2/v3: magic, version, tensor count, KV metadata, tensor infos, aligned data.

enum class GgufType : std::uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

std::string_view gguf_type_name(GgufType type) noexcept;

inline constexpr std::uint64_t kGgufMaxTensors = 1'000'000;
inline constexpr std::uint64_t kGgufMaxKvs = 1'000'000;
inline constexpr std::uint64_t kGgufMaxStringBytes = 16u << 20;                // 16 MiB per string
inline constexpr std::int64_t kGgufMaxHeaderRegion = std::int64_t{256} << 20;  // read cap
// Arrays longer than this (tokenizer.ggml.tokens, merges, scores) keep only their element
// type and length; shorter ones keep their elements. Nested arrays always keep only the
// summary, and one header keeps at most kGgufMaxStoredItems elements in all.
inline constexpr std::uint64_t kGgufMaxStoredArray = 1024;
inline constexpr std::uint64_t kGgufMaxStoredItems = 1u << 20;

struct GgufValue {
  GgufType type = GgufType::UINT8;
  // Scalars: UINT* -> uint64_t, INT* -> int64_t, FLOAT* -> double, BOOL -> bool,
  // STRING -> std::string; monostate for arrays.
  std::variant<std::monostate, std::uint64_t, std::int64_t, double, bool, std::string> scalar;
  // Arrays (type == ARRAY).
  GgufType element_type = GgufType::UINT8;
  std::uint64_t length = 0;
  bool items_stored = false;     // false: only element_type/length are known
  std::vector<GgufValue> items;  // the elements when items_stored

  bool is_array() const noexcept { return type == GgufType::ARRAY; }
  // Integer value of an integer scalar (UINT64 above INT64_MAX gives nullopt).
  std::optional<std::int64_t> as_int() const noexcept;
  // Any numeric scalar as double.
  std::optional<double> as_double() const noexcept;
  std::optional<bool> as_bool() const noexcept;
  const std::string* as_string() const noexcept;  // nullptr unless STRING
};

struct GgufHeader {
  std::string file;
  std::uint32_t version = 0;
  std::int64_t alignment = 32;   // general.alignment
  std::int64_t data_offset = 0;  // absolute offset of the (aligned) data section
  std::int64_t file_bytes = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<TensorInfo> tensors;  // in file order of the tensor infos

  std::int64_t tensor_bytes() const;
  std::optional<std::string> architecture() const;  // general.architecture
  std::optional<std::int64_t> get_int(const std::string& key) const;
  std::optional<double> get_double(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  const GgufValue* find(const std::string& key) const;
};

// Reads the header region of `path` in growing chunks (capped at kGgufMaxHeaderRegion);
// the tensor data is never read.
GgufHeader read_gguf_header(const std::string& path);

// Pure parser. `bytes` is a prefix of the file (or the whole file); `file_bytes` the size of
// the whole file (>= bytes.size()). Data that would lie beyond `bytes` is an error.
GgufHeader parse_gguf_header(std::string_view bytes, std::int64_t file_bytes,
                             const std::string& name);

namespace detail {
// Byte range [begin, end) of tensor `index` inside a file's data region.
struct ByteSpan {
  std::int64_t begin;
  std::int64_t end;
  std::size_t index;
};
// Sorts `spans` by position and returns {overlapping index, index it overlaps} for the first
// span that starts inside an earlier non-empty one; nullopt when none overlap.
std::optional<std::pair<std::size_t, std::size_t>> sort_and_find_overlap(
    std::vector<ByteSpan>& spans);
// A name from a hostile file, for an error message: quoted, printable ASCII kept, other bytes
// as \xNN, cut after 200 characters.
std::string show_name(std::string_view name);
}  // namespace detail

}  // namespace vramplan
