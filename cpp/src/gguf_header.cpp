// GGUF (v2/v3) header reader. Layout, all little-endian:
//   "GGUF" u32 version, u64 tensor_count, u64 kv_count,
//   kv_count x { string key, u32 type, value },
//   tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset },
//   padding to general.alignment, then the data section (offsets are relative to it).
// string = u64 length + bytes; array value = u32 element type, u64 count, elements.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <system_error>
#include <utility>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/tensor_headers.hpp"
#include "vramplan/utf8.hpp"

namespace vramplan {

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 4;            // arrays of arrays of ...
constexpr std::int64_t kFirstChunk = 1 << 20;  // streaming reader starts with 1 MiB

// Thrown by the cursor when the streaming reader should read more of the file and retry.
struct NeedMore {};

using detail::show_name;

// Fixed size of a scalar value type; 0 for STRING/ARRAY; -1 for unknown types.
int fixed_size(std::uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL:
      return 1;
    case GgufType::UINT16:
    case GgufType::INT16:
      return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32:
      return 4;
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64:
      return 8;
    case GgufType::STRING:
    case GgufType::ARRAY:
      return 0;
  }
  return -1;
}

// Smallest encoding of one value of `type` (used to bound array lengths by the bytes left).
std::uint64_t min_encoded_size(std::uint32_t type) {
  const int f = fixed_size(type);
  if (f > 0) return static_cast<std::uint64_t>(f);
  if (static_cast<GgufType>(type) == GgufType::STRING) return 8;  // u64 length
  return 12;                                                      // u32 type + u64 count
}

class Cursor {
 public:
  Cursor(std::string_view buf, std::int64_t file_bytes, const std::string& name, bool can_grow,
         bool at_read_cap)
      : buf_(buf),
        file_bytes_(file_bytes),
        name_(name),
        can_grow_(can_grow),
        at_read_cap_(at_read_cap) {}

  std::int64_t pos() const { return static_cast<std::int64_t>(pos_); }
  std::int64_t file_left() const { return file_bytes_ - pos(); }

  // Ensures `n` more bytes exist in the file and in the buffer.
  void require(std::uint64_t n, const std::string& what) {
    if (n > static_cast<std::uint64_t>(file_left())) {
      throw ParseError(name_, pos(),
                       what + " (" + std::to_string(n) + " bytes) runs past the end of the file (" +
                           std::to_string(file_bytes_) + " bytes; truncated?)");
    }
    if (n > buf_.size() - pos_) {
      if (can_grow_) throw NeedMore{};
      if (at_read_cap_) {
        throw ParseError(name_, pos(),
                         what + " lies beyond the " + std::to_string(kGgufMaxHeaderRegion >> 20) +
                             " MiB header read limit");
      }
      throw ParseError(
          name_, pos(),
          what + " runs past the end of the " + std::to_string(buf_.size()) + " bytes given");
    }
  }

  std::uint64_t uint(int size, const std::string& what) {
    require(static_cast<std::uint64_t>(size), what);
    std::uint64_t v = 0;
    for (int i = size - 1; i >= 0; --i) {
      v = (v << 8) | static_cast<unsigned char>(buf_[pos_ + static_cast<std::size_t>(i)]);
    }
    pos_ += static_cast<std::size_t>(size);
    return v;
  }
  std::uint32_t u32(const std::string& what) { return static_cast<std::uint32_t>(uint(4, what)); }
  std::uint64_t u64(const std::string& what) { return uint(8, what); }

  std::string_view bytes(std::uint64_t n, const std::string& what) {
    require(n, what);
    const auto out = buf_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  void skip(std::uint64_t n, const std::string& what) { bytes(n, what); }

  std::string_view string(const std::string& what) {
    const auto at = pos();
    const std::uint64_t len = u64(what + " length");
    if (len > kGgufMaxStringBytes) {
      throw ParseError(name_, at,
                       what + " length " + std::to_string(len) + " exceeds the " +
                           std::to_string(kGgufMaxStringBytes >> 20) + " MiB string limit");
    }
    return bytes(len, what);
  }

  const std::string& name() const { return name_; }

 private:
  std::string_view buf_;
  std::size_t pos_ = 0;
  std::int64_t file_bytes_;
  const std::string& name_;
  bool can_grow_;
  bool at_read_cap_;
};

class Parser {
 public:
  explicit Parser(Cursor& c) : c_(c) {}

  GgufValue value(std::uint32_t type, const std::string& what, int depth, bool store) {
    GgufValue v;
    const auto at = c_.pos();
    if (fixed_size(type) < 0) {
      throw ParseError(c_.name(), at, what + ": unknown GGUF value type " + std::to_string(type));
    }
    v.type = static_cast<GgufType>(type);
    switch (v.type) {
      case GgufType::UINT8:
      case GgufType::UINT16:
      case GgufType::UINT32:
      case GgufType::UINT64:
        v.scalar = c_.uint(fixed_size(type), what);
        break;
      case GgufType::INT8:
      case GgufType::INT16:
      case GgufType::INT32:
      case GgufType::INT64: {
        const int size = fixed_size(type);
        std::uint64_t u = c_.uint(size, what);
        if (size < 8 && (u >> (size * 8 - 1)) != 0) u |= ~std::uint64_t{0} << (size * 8);
        std::int64_t i = 0;
        std::memcpy(&i, &u, sizeof i);
        v.scalar = i;
        break;
      }
      case GgufType::FLOAT32: {
        const auto u = static_cast<std::uint32_t>(c_.uint(4, what));
        float f = 0;
        std::memcpy(&f, &u, sizeof f);
        v.scalar = static_cast<double>(f);
        break;
      }
      case GgufType::FLOAT64: {
        const std::uint64_t u = c_.uint(8, what);
        double d = 0;
        std::memcpy(&d, &u, sizeof d);
        v.scalar = d;
        break;
      }
      case GgufType::BOOL:
        v.scalar = c_.uint(1, what) != 0;
        break;
      case GgufType::STRING: {
        const auto string_at = c_.pos();
        const auto s = c_.string(what);
        // Stored strings reach JSON and Python (general.name becomes a model id).
        if (store) {
          if (const auto bad = utf8::find_invalid(s); bad != std::string_view::npos) {
            throw ParseError(c_.name(), string_at + 8 + static_cast<std::int64_t>(bad),
                             what + ": string is not valid UTF-8");
          }
          v.scalar = std::string(s);
        }
        break;
      }
      case GgufType::ARRAY:
        array(v, what, depth, store);
        break;
    }
    return v;
  }

 private:
  void array(GgufValue& v, const std::string& what, int depth, bool store) {
    const auto at = c_.pos();
    const std::uint32_t et = c_.u32(what + " element type");
    if (fixed_size(et) < 0) {
      throw ParseError(c_.name(), at, what + ": unknown array element type " + std::to_string(et));
    }
    const bool nested = static_cast<GgufType>(et) == GgufType::ARRAY;
    if (nested && depth + 1 >= kMaxArrayNesting) {
      throw ParseError(c_.name(), at,
                       what + ": arrays nested deeper than " + std::to_string(kMaxArrayNesting));
    }
    const auto count_at = c_.pos();
    const std::uint64_t count = c_.u64(what + " length");
    const std::uint64_t min_size = min_encoded_size(et);
    if (count > static_cast<std::uint64_t>(c_.file_left()) / min_size) {
      throw ParseError(
          c_.name(), count_at,
          what + ": array length " + std::to_string(count) + " runs past the end of the file");
    }
    v.element_type = static_cast<GgufType>(et);
    v.length = count;
    const bool keep = store && !nested && count <= kGgufMaxStoredArray &&
                      stored_items_ + count <= kGgufMaxStoredItems;
    v.items_stored = keep;
    if (keep) {
      stored_items_ += count;
      v.items.reserve(static_cast<std::size_t>(count));
      for (std::uint64_t i = 0; i < count; ++i) {
        v.items.push_back(value(et, what + "[" + std::to_string(i) + "]", depth + 1, true));
      }
      return;
    }
    const int fs = fixed_size(et);
    if (fs > 0) {
      c_.skip(count * static_cast<std::uint64_t>(fs), what + " elements");  // count bounded above
      return;
    }
    const std::string element = what + " element";
    for (std::uint64_t i = 0; i < count; ++i) {
      if (nested) {
        GgufValue inner;
        array(inner, element, depth + 1, false);
      } else {
        c_.string(element);
      }
    }
  }

  Cursor& c_;
  std::uint64_t stored_items_ = 0;
};

using Span = detail::ByteSpan;

// The tensor and metadata counts the preamble gives.
struct GgufCounts {
  std::uint64_t tensors = 0;
  std::uint64_t kvs = 0;
};

// Magic, version (2 or 3) and the two counts, each within its limit.
GgufCounts read_preamble(Cursor& c, GgufHeader& h) {
  const std::string& name = h.file;
  const auto magic = c.bytes(4, "GGUF magic");
  if (magic != "GGUF") {
    throw ParseError(name, 0,
                     "bad magic " + show_name(magic) + ", expected 'GGUF' (not a GGUF file)");
  }
  h.version = c.u32("GGUF version");
  if (h.version == 1) {
    throw ParseError(name, 4,
                     "GGUF version 1 is not supported (obsolete 32-bit-count format; "
                     "re-convert the model with a current llama.cpp)");
  }
  if (h.version != 2 && h.version != 3) {
    std::string hint;
    if (h.version == 0x02000000u || h.version == 0x03000000u) hint = " (big-endian GGUF?)";
    throw ParseError(
        name, 4,
        "unsupported GGUF version " + std::to_string(h.version) + hint + ", expected 2 or 3");
  }
  GgufCounts counts;
  counts.tensors = c.u64("tensor count");
  if (counts.tensors > kGgufMaxTensors) {
    throw ParseError(name, 8,
                     "tensor count " + std::to_string(counts.tensors) + " exceeds the limit of " +
                         std::to_string(kGgufMaxTensors));
  }
  counts.kvs = c.u64("metadata kv count");
  if (counts.kvs > kGgufMaxKvs) {
    throw ParseError(name, 16,
                     "metadata kv count " + std::to_string(counts.kvs) + " exceeds the limit of " +
                         std::to_string(kGgufMaxKvs));
  }
  return counts;
}

// The metadata key/value pairs (unique, UTF-8 keys), then general.alignment where given (a power
// of two up to 2^30).
void read_metadata(Cursor& c, Parser& p, GgufHeader& h, std::uint64_t n_kv) {
  const std::string& name = h.file;
  std::int64_t alignment_at = 0;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    const auto key_at = c.pos();
    const std::string label = "metadata kv #" + std::to_string(i);
    const std::string key(c.string(label + " key"));
    if (key.empty()) throw ParseError(name, key_at, label + ": empty key");
    if (utf8::find_invalid(key) != std::string_view::npos) {
      throw ParseError(name, key_at, label + ": key is not valid UTF-8");
    }
    const std::uint32_t type = c.u32("type of " + show_name(key));
    if (key == "general.alignment") alignment_at = key_at;
    GgufValue v = p.value(type, show_name(key), 0, /*store=*/true);
    if (!h.metadata.emplace(key, std::move(v)).second) {
      throw ParseError(name, key_at, "duplicate metadata key " + show_name(key));
    }
  }
  if (const auto it = h.metadata.find("general.alignment"); it != h.metadata.end()) {
    const auto a = it->second.as_int();
    if (!a || *a <= 0 || (*a & (*a - 1)) != 0 || *a > (std::int64_t{1} << 30)) {
      throw ParseError(name, alignment_at,
                       "general.alignment must be a power of two integer (at most 2^30)");
    }
    h.alignment = *a;
  }
}

// A tensor info's dimensions and ggml type into t's shape, dtype and byte size (`tl` names the
// tensor in errors): whole blocks per row, no int64 overflow.
void read_tensor_shape(Cursor& c, const std::string& name, const std::string& tl, TensorInfo& t) {
  const auto dims_at = c.pos();
  const std::uint32_t n_dims = c.u32(tl + " n_dims");
  if (n_dims > kMaxDims) {
    throw ParseError(
        name, dims_at,
        tl + ": n_dims " + std::to_string(n_dims) + " exceeds " + std::to_string(kMaxDims));
  }
  std::vector<std::int64_t> ne;
  std::int64_t elements = 1;
  for (std::uint32_t d = 0; d < n_dims; ++d) {
    const auto at = c.pos();
    const std::uint64_t dim = c.u64(tl + " ne[" + std::to_string(d) + "]");
    if (dim == 0) {
      throw ParseError(name, at, tl + ": dimension ne[" + std::to_string(d) + "] is zero");
    }
    if (dim > static_cast<std::uint64_t>(kInt64Max) ||
        elements > kInt64Max / static_cast<std::int64_t>(dim)) {
      throw ParseError(name, at, tl + ": element count overflows int64");
    }
    elements *= static_cast<std::int64_t>(dim);
    ne.push_back(static_cast<std::int64_t>(dim));
  }
  const auto type_at = c.pos();
  const std::uint32_t ggml_type = c.u32(tl + " type");
  const auto dtype = dtype_from_ggml_type(ggml_type);
  if (!dtype) {
    throw ParseError(name, type_at, tl + ": unknown ggml type " + std::to_string(ggml_type));
  }
  t.dtype = *dtype;
  const auto& info = dtype_info(*dtype);
  const std::int64_t ne0 = ne.empty() ? 1 : ne[0];
  if (ne0 % info.block_elements != 0) {
    throw ParseError(name, dims_at,
                     tl + ": row length ne[0] = " + std::to_string(ne0) +
                         " is not divisible by the " + std::string(info.name) + " block of " +
                         std::to_string(info.block_elements));
  }
  const std::int64_t blocks_per_row = ne0 / info.block_elements;
  if (blocks_per_row > kInt64Max / info.block_bytes) {
    throw ParseError(name, dims_at, tl + ": byte size overflows int64");
  }
  const std::int64_t row_bytes = blocks_per_row * info.block_bytes;
  const std::int64_t rows = elements / ne0;
  if (row_bytes != 0 && rows > kInt64Max / row_bytes) {
    throw ParseError(name, dims_at, tl + ": byte size overflows int64");
  }
  t.bytes = rows * row_bytes;
  t.shape.assign(ne.rbegin(), ne.rend());
}

// Each tensor's data offset as its info gives it (relative to the data section) and where in
// the file the info says so (for errors).
struct TensorOffsets {
  std::vector<std::int64_t> relative;
  std::vector<std::int64_t> info_at;
};

// The tensor infos (unique UTF-8 names, shapes, types, aligned offsets inside the file) into
// h.tensors.
TensorOffsets read_tensor_infos(Cursor& c, GgufHeader& h, std::uint64_t n_tensors) {
  const std::string& name = h.file;
  TensorOffsets offsets;
  std::set<std::string_view> names;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    const auto info_at = c.pos();
    const std::string label = "tensor info #" + std::to_string(i);
    const auto tname = c.string(label + " name");
    if (utf8::find_invalid(tname) != std::string_view::npos) {
      throw ParseError(name, info_at, label + ": name is not valid UTF-8");
    }
    if (!names.insert(tname).second) {
      throw ParseError(name, info_at, "duplicate tensor name " + show_name(tname));
    }
    const std::string tl = "tensor " + show_name(tname);
    TensorInfo t;
    t.name = std::string(tname);
    read_tensor_shape(c, name, tl, t);
    const auto off_at = c.pos();
    const std::uint64_t off = c.u64(tl + " offset");
    if (off > static_cast<std::uint64_t>(h.file_bytes)) {
      throw ParseError(
          name, off_at,
          tl + ": data offset " + std::to_string(off) + " lies past the end of the file");
    }
    if (off % static_cast<std::uint64_t>(h.alignment) != 0) {
      throw ParseError(name, off_at,
                       tl + ": data offset " + std::to_string(off) + " is not aligned to " +
                           std::to_string(h.alignment) + " (general.alignment)");
    }
    offsets.relative.push_back(static_cast<std::int64_t>(off));
    offsets.info_at.push_back(off_at);
    h.tensors.push_back(std::move(t));
  }
  return offsets;
}

// The data section (the end of the tensor infos rounded up to the alignment) and each tensor's
// absolute offset: every tensor's data inside the file, no two overlapping.
void place_tensor_data(GgufHeader& h, std::int64_t end_of_infos, const TensorOffsets& offsets) {
  const std::string& name = h.file;
  h.data_offset = (end_of_infos + h.alignment - 1) / h.alignment * h.alignment;
  std::vector<Span> spans;
  for (std::size_t i = 0; i < h.tensors.size(); ++i) {
    auto& t = h.tensors[i];
    const std::int64_t rel = offsets.relative[i];
    const std::int64_t room = h.file_bytes - h.data_offset;  // may be negative
    if (rel > room || t.bytes > room - rel) {
      throw ParseError(name, offsets.info_at[i],
                       "tensor " + show_name(t.name) + ": data [" + std::to_string(rel) + ", +" +
                           std::to_string(t.bytes) + ") lies past the end of the file (" +
                           std::to_string(room < 0 ? 0 : room) + " data bytes)");
    }
    t.offset = h.data_offset + rel;
    spans.push_back({rel, rel + t.bytes, i});
  }
  if (const auto overlap = detail::sort_and_find_overlap(spans)) {
    throw ParseError(name, offsets.info_at[overlap->first],
                     "tensor " + show_name(h.tensors[overlap->first].name) +
                         " data overlaps tensor " + show_name(h.tensors[overlap->second].name));
  }
}

GgufHeader parse_impl(std::string_view bytes, std::int64_t file_bytes, const std::string& name,
                      bool can_grow, bool at_read_cap) {
  if (file_bytes < 0 || static_cast<std::uint64_t>(file_bytes) < bytes.size()) {
    throw ParseError(name, 0,
                     "file size " + std::to_string(file_bytes) + " is smaller than the " +
                         std::to_string(bytes.size()) + " bytes given");
  }
  Cursor c(bytes, file_bytes, name, can_grow, at_read_cap);
  Parser p(c);
  GgufHeader h;
  h.file = name;
  h.file_bytes = file_bytes;
  const GgufCounts counts = read_preamble(c, h);
  read_metadata(c, p, h, counts.kvs);
  const TensorOffsets offsets = read_tensor_infos(c, h, counts.tensors);
  place_tensor_data(h, c.pos(), offsets);
  return h;
}

}  // namespace

std::string_view gguf_type_name(GgufType type) noexcept {
  switch (type) {
    case GgufType::UINT8:
      return "UINT8";
    case GgufType::INT8:
      return "INT8";
    case GgufType::UINT16:
      return "UINT16";
    case GgufType::INT16:
      return "INT16";
    case GgufType::UINT32:
      return "UINT32";
    case GgufType::INT32:
      return "INT32";
    case GgufType::FLOAT32:
      return "FLOAT32";
    case GgufType::BOOL:
      return "BOOL";
    case GgufType::STRING:
      return "STRING";
    case GgufType::ARRAY:
      return "ARRAY";
    case GgufType::UINT64:
      return "UINT64";
    case GgufType::INT64:
      return "INT64";
    case GgufType::FLOAT64:
      return "FLOAT64";
  }
  return "?";
}

std::optional<std::int64_t> GgufValue::as_int() const noexcept {
  if (const auto* u = std::get_if<std::uint64_t>(&scalar)) {
    if (*u > static_cast<std::uint64_t>(kInt64Max)) return std::nullopt;
    return static_cast<std::int64_t>(*u);
  }
  if (const auto* i = std::get_if<std::int64_t>(&scalar)) return *i;
  return std::nullopt;
}

std::optional<double> GgufValue::as_double() const noexcept {
  if (const auto* u = std::get_if<std::uint64_t>(&scalar)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<std::int64_t>(&scalar)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&scalar)) return *d;
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const noexcept {
  if (const auto* b = std::get_if<bool>(&scalar)) return *b;
  return std::nullopt;
}

const std::string* GgufValue::as_string() const noexcept {
  return std::get_if<std::string>(&scalar);
}

std::int64_t GgufHeader::tensor_bytes() const {
  std::int64_t sum = 0;
  for (const auto& t : tensors) sum += t.bytes;
  return sum;
}

const GgufValue* GgufHeader::find(const std::string& key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

std::optional<std::int64_t> GgufHeader::get_int(const std::string& key) const {
  const auto* v = find(key);
  return v ? v->as_int() : std::nullopt;
}

std::optional<double> GgufHeader::get_double(const std::string& key) const {
  const auto* v = find(key);
  return v ? v->as_double() : std::nullopt;
}

std::optional<std::string> GgufHeader::get_string(const std::string& key) const {
  const auto* v = find(key);
  if (!v || !v->as_string()) return std::nullopt;
  return *v->as_string();
}

std::optional<std::string> GgufHeader::architecture() const {
  return get_string("general.architecture");
}

GgufHeader parse_gguf_header(std::string_view bytes, std::int64_t file_bytes,
                             const std::string& name) {
  return parse_impl(bytes, file_bytes, name, /*can_grow=*/false, /*at_read_cap=*/false);
}

GgufHeader read_gguf_header(const std::string& path) {
  // Any size: only the header region is read.
  RegularFile in(path, "GGUF file", std::numeric_limits<std::int64_t>::max());
  const std::int64_t file_bytes = in.size();
  const std::int64_t limit = std::min(file_bytes, kGgufMaxHeaderRegion);

  std::string buf;
  std::int64_t want = std::min(limit, kFirstChunk);
  for (;;) {
    const auto have = static_cast<std::int64_t>(buf.size());
    buf.resize(static_cast<std::size_t>(want));
    if (in.read(buf.data() + have, static_cast<std::size_t>(want - have)) !=
        static_cast<std::size_t>(want - have)) {
      throw ParseError(path, have, "read failed (file shrank while reading?)");
    }
    const bool can_grow = want < limit;
    const bool at_cap = want == kGgufMaxHeaderRegion && want < file_bytes;
    try {
      return parse_impl(buf, file_bytes, path, can_grow, at_cap);
    } catch (const NeedMore&) {
      want = std::min(limit, want * 4);
    }
  }
}

}  // namespace vramplan
