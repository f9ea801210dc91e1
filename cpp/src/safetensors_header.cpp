// safetensors header reader: u64 LE length N, N bytes of JSON
//   {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"k": "v"}}
// then the data region; offsets are relative to its start (8 + N).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/tensor_headers.hpp"
#include "vramplan/utf8.hpp"

namespace vramplan {

namespace detail {

std::optional<std::pair<std::size_t, std::size_t>> sort_and_find_overlap(
    std::vector<ByteSpan>& spans) {
  std::sort(spans.begin(), spans.end(), [](const ByteSpan& a, const ByteSpan& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    return a.end != b.end ? a.end < b.end : a.index < b.index;  // ties in input order
  });
  std::int64_t max_end = 0;
  std::size_t owner = 0;
  bool have_owner = false;
  for (const auto& s : spans) {
    if (s.end == s.begin) continue;  // empty tensors occupy no bytes
    if (have_owner && s.begin < max_end) return std::make_pair(s.index, owner);
    if (s.end > max_end) {
      max_end = s.end;
      owner = s.index;
      have_owner = true;
    }
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

using nlohmann::json;

constexpr std::int64_t kLengthPrefix = 8;
constexpr int kMaxJsonDepth = 16;  // a valid header nests 3 deep

using detail::show_name;

std::uint64_t read_u64_le(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Depth of [ and { outside strings, so that no hostile header nests deeper than the
// format needs (keeps nlohmann's work and memory proportional and shallow).
void check_json_depth(std::string_view text, const std::string& name) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw ParseError(
            name, kLengthPrefix + static_cast<std::int64_t>(i),
            "JSON header nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// Non-negative integer from a JSON number; nullopt for floats, negatives, > INT64_MAX.
std::optional<std::int64_t> json_nonneg_int(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < 0) return std::nullopt;
    return i;
  }
  return std::nullopt;
}

// Element types a safetensors file may name: the plain (non-block) types, spelled exactly
// as in the format ("BF16", not "bfloat16" or "Q4_K").
std::optional<DType> safetensors_dtype(const std::string& s) {
  const auto d = parse_dtype(s);
  if (!d) return std::nullopt;
  const auto& info = dtype_info(*d);
  if (info.block_elements != 1 || info.name != s) return std::nullopt;
  return d;
}

// SAX front end to nlohmann's DOM builder for a JSON object of entries ({"key": value, ...}).
// Each top-level value is built on its own and handed to `on_entry` as soon as it ends, so
// memory follows one entry, not the whole document, and a bad entry stops the parse at once.
// A key repeated in any object goes to `on_duplicate` (which throws): nlohmann would silently
// keep the last copy. Top-level keys are hashed once each, nested objects' keys sorted once,
// so the check is O(n log n) at worst (nlohmann's callback parser instead rescanned the
// enclosing object at every value's end: quadratic).
class EntryStream {
 public:
  using OnEntry = std::function<void(std::string&& key, json&& value)>;
  // (top-level key the object sits in, or "" for the top level; the repeated key)
  using OnDuplicate = std::function<void(const std::string& entry, const std::string& key)>;

  EntryStream(OnEntry on_entry, OnDuplicate on_duplicate)
      : on_entry_(std::move(on_entry)), on_duplicate_(std::move(on_duplicate)) {}

  // Parses `text`; false when its top level is not an object. json::parse_error (and the
  // other json::exception types) escape for malformed text, as from json::parse.
  bool parse(std::string_view text) {
    json::sax_parse(text.data(), text.data() + text.size(), this);
    return !not_object_;
  }

  bool null() {
    return scalar([](Dom& d) { return d.null(); });
  }
  bool boolean(bool v) {
    return scalar([v](Dom& d) { return d.boolean(v); });
  }
  bool number_integer(json::number_integer_t v) {
    return scalar([v](Dom& d) { return d.number_integer(v); });
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return scalar([v](Dom& d) { return d.number_unsigned(v); });
  }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    return scalar([&](Dom& d) { return d.number_float(v, text); });
  }
  bool string(json::string_t& v) {
    return scalar([&](Dom& d) { return d.string(v); });
  }
  bool binary(json::binary_t& v) {
    return scalar([&](Dom& d) { return d.binary(v); });
  }
  bool start_object(std::size_t n) {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    open_entry_value();
    nested_keys_.emplace_back();
    ++depth_;
    return dom_->start_object(n);
  }
  bool key(json::string_t& k) {
    if (depth_ == 1) {
      if (!top_keys_.insert(k).second) on_duplicate_("", k);
      entry_key_ = k;
      return true;
    }
    nested_keys_.back().push_back(k);
    return dom_->key(k);
  }
  bool end_object() {
    if (--depth_ == 0) return true;
    // Nested objects are small (a tensor entry has 3 keys): sorting beats a hash set there.
    std::vector<std::string>& keys = nested_keys_.back();
    std::sort(keys.begin(), keys.end());
    const auto repeated = std::adjacent_find(keys.begin(), keys.end());
    if (repeated != keys.end()) on_duplicate_(entry_key_, *repeated);
    nested_keys_.pop_back();
    const bool ok = dom_->end_object();
    if (depth_ == 1) close_entry();
    return ok;
  }
  bool start_array(std::size_t n) {
    if (depth_ == 0) return top_level_not_object();
    open_entry_value();
    ++depth_;
    return dom_->start_array(n);
  }
  bool end_array() {
    --depth_;
    const bool ok = dom_->end_array();
    if (depth_ == 1) close_entry();
    return ok;
  }
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const Exception& ex) {
    throw ex;  // the concrete json::parse_error / out_of_range, with its byte position
  }

 private:
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;

  bool top_level_not_object() {
    not_object_ = true;
    return false;  // stops the parse
  }
  void open_entry_value() {
    if (depth_ == 1) {
      value_ = json();
      dom_.emplace(value_);
    }
  }
  template <class Forward>
  bool scalar(Forward forward) {
    if (depth_ == 0) return top_level_not_object();
    if (depth_ > 1) return forward(*dom_);
    open_entry_value();  // a scalar entry: the whole value
    forward(*dom_);
    close_entry();
    return true;
  }
  void close_entry() {
    dom_.reset();
    on_entry_(std::move(entry_key_), std::move(value_));
  }

  OnEntry on_entry_;
  OnDuplicate on_duplicate_;
  int depth_ = 0;  // open objects and arrays
  bool not_object_ = false;
  std::string entry_key_;
  std::unordered_set<std::string> top_keys_;
  std::vector<std::vector<std::string>> nested_keys_;  // one per open nested object
  json value_;
  std::optional<Dom> dom_;
};

using Span = detail::ByteSpan;

}  // namespace

std::int64_t SafetensorsHeader::tensor_bytes() const {
  std::int64_t sum = 0;
  for (const auto& t : tensors) sum += t.bytes;
  return sum;
}

namespace {

// The JSON header's text after the 8-byte length prefix: a length inside the file and the bytes
// given, valid UTF-8, an object, nested no deeper than the limit.
std::string_view header_json_text(std::string_view bytes, std::int64_t file_bytes,
                                  const std::string& name) {
  if (file_bytes < 0 || static_cast<std::uint64_t>(file_bytes) < bytes.size()) {
    throw ParseError(name, 0,
                     "file size " + std::to_string(file_bytes) + " is smaller than the " +
                         std::to_string(bytes.size()) + " bytes given");
  }
  if (file_bytes < kLengthPrefix || bytes.size() < static_cast<std::size_t>(kLengthPrefix)) {
    throw ParseError(name, 0,
                     "truncated: file has " + std::to_string(file_bytes) +
                         " bytes, too short for the 8-byte safetensors header length");
  }
  const std::uint64_t n = read_u64_le(bytes.data());
  if (n > static_cast<std::uint64_t>(kSafetensorsMaxHeaderBytes)) {
    throw ParseError(name, 0,
                     "header length " + std::to_string(n) + " exceeds the limit of " +
                         std::to_string(kSafetensorsMaxHeaderBytes) +
                         " bytes (not a safetensors file?)");
  }
  const auto header_len = static_cast<std::int64_t>(n);
  if (header_len > file_bytes - kLengthPrefix) {
    throw ParseError(name, 0,
                     "header length " + std::to_string(header_len) +
                         " runs past the end of the file (" + std::to_string(file_bytes) +
                         " bytes)");
  }
  if (static_cast<std::uint64_t>(kLengthPrefix + header_len) > bytes.size()) {
    throw ParseError(name, kLengthPrefix + static_cast<std::int64_t>(bytes.size()),
                     "header length " + std::to_string(header_len) +
                         " runs past the end of the bytes given (" + std::to_string(bytes.size()) +
                         ")");
  }
  const std::string_view text = bytes.substr(kLengthPrefix, static_cast<std::size_t>(n));
  if (const auto bad = utf8::find_invalid(text); bad != std::string_view::npos) {
    throw ParseError(name, kLengthPrefix + static_cast<std::int64_t>(bad),
                     "JSON header is not valid UTF-8");
  }
  if (text.empty() || text.front() != '{') {
    throw ParseError(name, kLengthPrefix, "JSON header does not start with '{'");
  }
  check_json_depth(text, name);
  return text;
}

// The __metadata__ entry: an object of strings.
void read_metadata_entry(const json& value, SafetensorsHeader& out) {
  if (!value.is_object()) {
    throw ParseError(out.file, kLengthPrefix, "__metadata__ is not an object");
  }
  for (const auto& [mk, mv] : value.items()) {
    if (!mv.is_string()) {
      throw ParseError(out.file, kLengthPrefix,
                       "__metadata__ value " + show_name(mk) + " is not a string");
    }
    out.metadata.emplace(mk, mv.get<std::string>());
  }
}

// One tensor entry and its data span (relative to the data region).
struct TensorEntry {
  TensorInfo info;
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

// A tensor entry: a known dtype, a shape of non-negative dimensions, and data_offsets inside the
// data region spanning exactly dtype x shape bytes.
TensorEntry read_tensor_entry(const std::string& key, const json& value,
                              const SafetensorsHeader& out) {
  const auto field_error = [&](const std::string& field, const std::string& problem) {
    return ParseError(
        out.file, kLengthPrefix,
        "tensor " + show_name(key) + (field.empty() ? "" : ": " + field) + ": " + problem);
  };
  // nlohmann validates UTF-8 (including \u escapes) but the check is cheap to restate.
  if (utf8::find_invalid(key) != std::string_view::npos) {
    throw field_error("", "name is not valid UTF-8");
  }
  if (!value.is_object()) throw field_error("", "entry is not an object");
  const auto dt = value.find("dtype");
  const auto sh = value.find("shape");
  const auto off = value.find("data_offsets");
  if (dt == value.end()) throw field_error("dtype", "missing");
  if (sh == value.end()) throw field_error("shape", "missing");
  if (off == value.end()) throw field_error("data_offsets", "missing");
  if (!dt->is_string()) throw field_error("dtype", "not a string");
  const auto dtype = safetensors_dtype(dt->get<std::string>());
  if (!dtype) throw field_error("dtype", "unknown dtype " + show_name(dt->get<std::string>()));

  if (!sh->is_array()) throw field_error("shape", "not an array");
  TensorEntry entry;
  TensorInfo& t = entry.info;
  t.name = key;
  t.dtype = *dtype;
  std::int64_t elements = 1;
  for (const auto& d : *sh) {
    const auto dim = json_nonneg_int(d);
    if (!dim)
      throw field_error("shape", "dimension " + d.dump() + " is not a non-negative integer");
    t.shape.push_back(*dim);
    if (*dim != 0 && elements > std::numeric_limits<std::int64_t>::max() / *dim) {
      throw field_error("shape", "element count overflows int64");
    }
    elements *= *dim;
  }
  t.bytes = dtype_bytes_for_elements(t.dtype, elements);
  if (t.bytes < 0) throw field_error("shape", "byte size overflows int64");

  if (!off->is_array() || off->size() != 2) {
    throw field_error("data_offsets", "not an array of two integers");
  }
  const auto begin = json_nonneg_int((*off)[0]);
  const auto end = json_nonneg_int((*off)[1]);
  if (!begin || !end) throw field_error("data_offsets", "not non-negative integers");
  if (*begin > *end) {
    throw field_error("data_offsets",
                      "begin " + std::to_string(*begin) + " > end " + std::to_string(*end));
  }
  const std::int64_t data_len = out.file_bytes - out.header_bytes;
  if (*end > data_len) {
    throw field_error("data_offsets", "end " + std::to_string(*end) +
                                          " lies outside the data region (" +
                                          std::to_string(data_len) + " bytes)");
  }
  if (*end - *begin != t.bytes) {
    throw field_error("data_offsets", "span of " + std::to_string(*end - *begin) +
                                          " bytes does not match " +
                                          std::string(dtype_info(t.dtype).name) +
                                          " x shape = " + std::to_string(t.bytes) + " bytes");
  }
  t.offset = out.header_bytes + *begin;
  entry.begin = *begin;
  entry.end = *end;
  return entry;
}

// The tensors in data order, none overlapping another.
void order_tensors_by_offset(SafetensorsHeader& out, std::vector<Span>& spans) {
  if (const auto overlap = detail::sort_and_find_overlap(spans)) {
    const Span& s = *std::find_if(spans.begin(), spans.end(),
                                  [&](const Span& x) { return x.index == overlap->first; });
    throw ParseError(out.file, out.header_bytes + s.begin,
                     "tensor " + show_name(out.tensors[s.index].name) + " data_offsets [" +
                         std::to_string(s.begin) + ", " + std::to_string(s.end) +
                         ") overlap tensor " + show_name(out.tensors[overlap->second].name));
  }
  std::vector<TensorInfo> sorted;
  sorted.reserve(out.tensors.size());
  for (const auto& s : spans) sorted.push_back(std::move(out.tensors[s.index]));
  out.tensors = std::move(sorted);
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view bytes, std::int64_t file_bytes,
                                           const std::string& name) {
  const std::string_view text = header_json_text(bytes, file_bytes, name);
  SafetensorsHeader out;
  out.file = name;
  out.header_bytes = kLengthPrefix + static_cast<std::int64_t>(text.size());
  out.file_bytes = file_bytes;

  std::vector<Span> spans;
  const auto add_entry = [&](std::string&& key, json&& value) {
    if (key == "__metadata__") {
      read_metadata_entry(value, out);
      return;
    }
    TensorEntry entry = read_tensor_entry(key, value, out);
    spans.push_back({entry.begin, entry.end, out.tensors.size()});
    out.tensors.push_back(std::move(entry.info));
  };
  // A repeated key would silently hide a tensor or a field (nlohmann keeps the last one).
  const auto duplicate = [&](const std::string& entry, const std::string& key) {
    if (entry.empty()) {
      throw ParseError(name, kLengthPrefix,
                       "tensor " + show_name(key) + " appears twice in the header");
    }
    throw ParseError(name, kLengthPrefix,
                     "tensor " + show_name(entry) + ": key " + show_name(key) + " appears twice");
  };
  try {
    EntryStream(add_entry, duplicate).parse(text);  // the text starts with '{'
  } catch (const json::parse_error& e) {
    const auto pos = e.byte > 0 ? static_cast<std::int64_t>(e.byte) - 1 : 0;
    throw ParseError(name, kLengthPrefix + pos,
                     std::string("JSON header does not parse: ") + e.what());
  } catch (const json::exception& e) {
    throw ParseError(name, kLengthPrefix, std::string("JSON header does not parse: ") + e.what());
  }
  order_tensors_by_offset(out, spans);
  return out;
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  // Any size: only the length prefix and the header are read.
  RegularFile in(path, "safetensors file", std::numeric_limits<std::int64_t>::max());
  const std::int64_t file_bytes = in.size();
  std::string buf(static_cast<std::size_t>(std::min<std::int64_t>(file_bytes, kLengthPrefix)),
                  '\0');
  if (in.read(buf.data(), buf.size()) != buf.size()) {
    throw ParseError(path, 0, "read failed (file shrank while reading?)");
  }
  if (buf.size() == static_cast<std::size_t>(kLengthPrefix)) {
    const std::uint64_t n = read_u64_le(buf.data());
    // Only read the JSON if its length is plausible; otherwise let the parser report it.
    if (n <= static_cast<std::uint64_t>(kSafetensorsMaxHeaderBytes) &&
        static_cast<std::int64_t>(n) <= file_bytes - kLengthPrefix) {
      buf.resize(static_cast<std::size_t>(kLengthPrefix + static_cast<std::int64_t>(n)));
      if (in.read(buf.data() + kLengthPrefix, static_cast<std::size_t>(n)) != n) {
        throw ParseError(path, kLengthPrefix, "read failed (file shrank while reading?)");
      }
    }
  }
  return parse_safetensors_header(buf, file_bytes, path);
}

// ---------------------------------------------------------------------------------------
// Folders.

namespace {

namespace fs = std::filesystem;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Real indexes are a few MB (DeepSeek-V3's 91,000 entries: 9 MB); the cap bounds the DOM.
constexpr std::int64_t kMaxIndexBytes = 64 << 20;

json read_index_json(const fs::path& path) {
  const std::string name = path.string();
  const std::string text = read_regular_file(name, "index file", kMaxIndexBytes);
  check_json_depth(text, name);
  json root = json::object();
  const auto add_entry = [&](std::string&& key, json&& value) {
    root.emplace(std::move(key), std::move(value));
  };
  // A tensor listed twice in weight_map would silently lose one of its shards.
  const auto duplicate = [&](const std::string& entry, const std::string& key) {
    throw ParseError(
        name, 0, (entry.empty() ? "key " : entry + ": key ") + show_name(key) + " appears twice");
  };
  try {
    if (!EntryStream(add_entry, duplicate).parse(text)) return json();  // not an object
  } catch (const json::parse_error& e) {
    const auto pos = e.byte > 0 ? static_cast<std::int64_t>(e.byte) - 1 : 0;
    throw ParseError(name, pos, std::string("index JSON does not parse: ") + e.what());
  } catch (const json::exception& e) {
    throw ParseError(name, 0, std::string("index JSON does not parse: ") + e.what());
  }
  return root;
}

}  // namespace

CheckpointTensors read_safetensors_folder(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw ParseError(dir, 0, "not a directory");

  std::vector<std::string> present;  // *.safetensors names in the folder
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string fname = it->path().filename().string();
    if (ends_with(fname, ".safetensors")) present.push_back(fname);
  }
  if (ec) throw ParseError(dir, 0, "cannot list directory: " + ec.message());
  std::sort(present.begin(), present.end());

  const fs::path index_path = root / "model.safetensors.index.json";
  std::vector<std::string> chosen;
  std::unordered_map<std::string, std::string> weight_map;  // tensor -> shard, from index
  const bool have_index = fs::exists(index_path, ec);
  if (!have_index && fs::is_symlink(fs::symlink_status(index_path, ec))) {
    throw ParseError(index_path.string(), 0, "broken symlink (incomplete download?)");
  }
  if (have_index) {
    const json index = read_index_json(index_path);
    const std::string iname = index_path.string();
    if (!index.is_object()) throw ParseError(iname, 0, "index is not a JSON object");
    const auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object()) {
      throw ParseError(iname, 0, "weight_map: missing or not an object");
    }
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : wm->items()) {
      if (!shard.is_string()) {
        throw ParseError(iname, 0,
                         "weight_map: value of " + show_name(tensor) + " is not a string");
      }
      const auto s = shard.get<std::string>();
      // Shard names are plain file names in the same folder.
      if (s.empty() || s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
          s == "." || s == "..") {
        throw ParseError(iname, 0,
                         "weight_map: shard name " + show_name(s) + " is not a file name");
      }
      shards.insert(s);
      weight_map.emplace(tensor, s);
    }
    if (shards.empty()) throw ParseError(iname, 0, "weight_map is empty");
    chosen.assign(shards.begin(), shards.end());
  } else {
    bool any_consolidated = false;
    bool any_other = false;
    for (const auto& f : present) {
      (starts_with(f, "consolidated") ? any_consolidated : any_other) = true;
    }
    for (const auto& f : present) {
      if (any_consolidated && any_other && starts_with(f, "consolidated")) continue;
      chosen.push_back(f);
    }
  }
  if (chosen.empty()) throw ParseError(dir, 0, "no *.safetensors files in folder");

  CheckpointTensors out;
  std::unordered_map<std::string, std::string> seen;  // tensor -> file
  for (const auto& shard : chosen) {
    const fs::path p = root / shard;
    const std::string pname = p.string();
    if (!fs::exists(p, ec)) {
      throw ParseError(pname, 0,
                       have_index ? "shard named in model.safetensors.index.json is missing "
                                    "(or a broken symlink)"
                                  : "file is missing (broken symlink?)");
    }
    SafetensorsHeader h = read_safetensors_header(pname);
    for (auto& t : h.tensors) {
      if (have_index) {
        const auto w = weight_map.find(t.name);
        if (w == weight_map.end()) {
          throw ParseError(
              pname, t.offset,
              "tensor " + show_name(t.name) + " is not listed in model.safetensors.index.json");
        }
        if (w->second != shard) {
          throw ParseError(pname, t.offset,
                           "tensor " + show_name(t.name) +
                               " is in this shard but the index maps it to " +
                               show_name(w->second));
        }
      }
      const auto [it, inserted] = seen.emplace(t.name, pname);
      if (!inserted) {
        throw ParseError(pname, t.offset,
                         "tensor " + show_name(t.name) + " also appears in " + it->second +
                             " (duplicate checkpoint copies in one folder?)");
      }
      out.total_bytes += t.bytes;
      out.tensors.push_back(std::move(t));
    }
    out.files.push_back(pname);
  }
  if (have_index) {
    for (const auto& [tensor, shard] : weight_map) {
      if (seen.find(tensor) == seen.end()) {
        throw ParseError((root / shard).string(), 0,
                         "tensor " + show_name(tensor) +
                             " listed in model.safetensors.index.json is not in this shard");
      }
    }
  }
  return out;
}

namespace detail {

std::string show_name(std::string_view s) {
  std::string out = "'";
  std::size_t shown = 0;
  for (const char ch : s) {
    if (++shown > 200) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out += ch;
    } else {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  out += "'";
  return out;
}

}  // namespace detail

}  // namespace vramplan
