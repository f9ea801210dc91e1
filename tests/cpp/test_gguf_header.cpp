// GGUF header reader: tiny files written by the tests, byte counts worked out by hand from
// the block table (shared/reference/weight-formats.md section 8.1).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/tensor_headers.hpp"

namespace {

namespace fs = std::filesystem;
using vramplan::DType;
using vramplan::GgufType;
using vramplan::ParseError;

using vramplan_test::write_file;

struct TempDir : vramplan_test::TempDir {
  TempDir() : vramplan_test::TempDir("gguf") {}
};

void expect_parse_error(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no ParseError; expected one containing: " << fragment;
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected fragment: " << fragment;
  }
}

// ggml type ids, from the GGUF block table.
constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14,
                        kIQ4_XS = 23, kBF16 = 30, kMXFP4 = 39;

// Little-endian GGUF byte writer. Counts are written as given, so tests can lie.
class Gguf {
 public:
  explicit Gguf(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3,
                const char* magic = "GGUF") {
    out_.append(magic, 4);
    u32(version);
    u64(n_tensors);
    u64(n_kv);
  }
  Gguf& raw(const std::string& s) {
    out_ += s;
    return *this;
  }
  Gguf& u8(std::uint8_t v) {
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  Gguf& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  Gguf& u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  Gguf& str(const std::string& s) {
    u64(s.size());
    out_ += s;
    return *this;
  }
  Gguf& kv_u32(const std::string& key, std::uint32_t v) {
    return str(key).u32(static_cast<std::uint32_t>(GgufType::UINT32)).u32(v);
  }
  Gguf& kv_str(const std::string& key, const std::string& v) {
    return str(key).u32(static_cast<std::uint32_t>(GgufType::STRING)).str(v);
  }
  Gguf& kv_f32(const std::string& key, float f) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    return str(key).u32(static_cast<std::uint32_t>(GgufType::FLOAT32)).u32(bits);
  }
  Gguf& kv_strings(const std::string& key, const std::vector<std::string>& v) {
    str(key).u32(static_cast<std::uint32_t>(GgufType::ARRAY));
    u32(static_cast<std::uint32_t>(GgufType::STRING)).u64(v.size());
    for (const auto& s : v) str(s);
    return *this;
  }
  Gguf& kv_i32s(const std::string& key, const std::vector<std::int32_t>& v) {
    str(key).u32(static_cast<std::uint32_t>(GgufType::ARRAY));
    u32(static_cast<std::uint32_t>(GgufType::INT32)).u64(v.size());
    for (const auto x : v) u32(static_cast<std::uint32_t>(x));
    return *this;
  }
  // ne innermost first, as the format writes it.
  Gguf& tensor(const std::string& name, const std::vector<std::uint64_t>& ne, std::uint32_t type,
               std::uint64_t offset) {
    str(name).u32(static_cast<std::uint32_t>(ne.size()));
    for (const auto d : ne) u64(d);
    return u32(type).u64(offset);
  }
  // Pads to `alignment` and appends `data_bytes` bytes of tensor data.
  std::string finish(std::uint64_t data_bytes, std::uint64_t alignment = 32) const {
    std::string s = out_;
    while (s.size() % alignment != 0) s.push_back('\0');
    s.append(data_bytes, '\xCD');
    return s;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// ---------------------------------------------------------------------------------------

// Bytes by hand (ne0 first):
//   token_embd  Q4_K  [512, 4]     2 blocks x 144 B x 4 rows  = 1152
//   output      Q6_K  [256, 3]     1 x 210 x 3                =  630
//   blk.0.q     Q4_0  [64, 2]      2 x 18 x 2                 =   72
//   blk.0.v     Q8_0  [32, 3]      1 x 34 x 3                 =  102
//   blk.0.ffn   IQ4_XS [256, 1]    1 x 136                    =  136
//   blk.0.exps  MXFP4 [64, 2, 2]   2 x 17 x 4 rows            =  136
//   norm        F32   [8, 4]       32 x 4                     =  128
//   bias        F16   [16]         16 x 2                     =   32
//   scale       BF16  [4]          4 x 2                      =    8
// Offsets are the running totals rounded up to 32.
struct Placed {
  const char* name;
  std::vector<std::uint64_t> ne;
  std::uint32_t type;
  std::int64_t bytes;
  DType dtype;
};
const std::vector<Placed>& placed() {
  static const std::vector<Placed> p = {
      {"token_embd.weight", {512, 4}, kQ4_K, 1152, DType::Q4_K},
      {"output.weight", {256, 3}, kQ6_K, 630, DType::Q6_K},
      {"blk.0.attn_q.weight", {64, 2}, kQ4_0, 72, DType::Q4_0},
      {"blk.0.attn_v.weight", {32, 3}, kQ8_0, 102, DType::Q8_0},
      {"blk.0.ffn_down.weight", {256, 1}, kIQ4_XS, 136, DType::IQ4_XS},
      {"blk.0.ffn_down_exps.weight", {64, 2, 2}, kMXFP4, 136, DType::MXFP4},
      {"output_norm.weight", {8, 4}, kF32, 128, DType::F32},
      {"blk.0.attn_q.bias", {16}, kF16, 32, DType::F16},
      {"blk.0.scale", {4}, kBF16, 8, DType::BF16},
  };
  return p;
}
constexpr std::int64_t kPlacedTotal = 1152 + 630 + 72 + 102 + 136 + 136 + 128 + 32 + 8;

std::string valid_file(std::size_t n_tokens, std::uint64_t alignment = 32,
                       std::uint32_t version = 3) {
  const bool custom_alignment = alignment != 32;
  Gguf g(placed().size(), 7 + (custom_alignment ? 1 : 0), version);
  g.kv_str("general.architecture", "llama");
  g.kv_str("general.name", "Tiny Test");
  g.kv_u32("llama.block_count", 1);
  g.kv_f32("llama.rope.freq_base", 500000.0f);
  g.str("general.flag").u32(static_cast<std::uint32_t>(GgufType::BOOL)).u8(1);
  g.kv_i32s("llama.attention.head_count_kv", {8, -1, 4});
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < n_tokens; ++i) tokens.push_back("tok" + std::to_string(i));
  g.kv_strings("tokenizer.ggml.tokens", tokens);
  if (custom_alignment) g.kv_u32("general.alignment", static_cast<std::uint32_t>(alignment));
  std::uint64_t off = 0;
  for (const auto& t : placed()) {
    g.tensor(t.name, t.ne, t.type, off);
    off += static_cast<std::uint64_t>(t.bytes);
    off = (off + alignment - 1) / alignment * alignment;
  }
  return g.finish(off, alignment);
}

void check_valid(const vramplan::GgufHeader& h, std::int64_t alignment) {
  EXPECT_EQ(h.alignment, alignment);
  EXPECT_EQ(h.data_offset % alignment, 0);
  ASSERT_EQ(h.tensors.size(), placed().size());
  std::int64_t off = 0;
  for (std::size_t i = 0; i < placed().size(); ++i) {
    const auto& want = placed()[i];
    const auto& t = h.tensors[i];
    EXPECT_EQ(t.name, want.name);
    EXPECT_EQ(t.dtype, want.dtype) << want.name;
    EXPECT_EQ(t.bytes, want.bytes) << want.name;
    EXPECT_EQ(t.offset, h.data_offset + off) << want.name;
    ASSERT_EQ(t.shape.size(), want.ne.size());
    for (std::size_t d = 0; d < want.ne.size(); ++d) {  // reversed: outermost first
      EXPECT_EQ(t.shape[d], static_cast<std::int64_t>(want.ne[want.ne.size() - 1 - d]));
    }
    off = (off + want.bytes + alignment - 1) / alignment * alignment;
  }
  EXPECT_EQ(h.tensor_bytes(), kPlacedTotal);
  EXPECT_EQ(h.file_bytes, h.data_offset + off);
}

TEST(GgufHeader, QuantTypesMetadataAndExactBytes) {
  TempDir tmp;
  const auto path = tmp.path() / "tiny.gguf";
  write_file(path, valid_file(2000));
  const auto h = vramplan::read_gguf_header(path.string());
  EXPECT_EQ(h.file, path.string());
  EXPECT_EQ(h.version, 3u);
  check_valid(h, 32);
  EXPECT_EQ(h.architecture(), "llama");
  EXPECT_EQ(h.get_string("general.name"), "Tiny Test");
  EXPECT_EQ(h.get_int("llama.block_count"), 1);
  EXPECT_EQ(h.get_double("llama.rope.freq_base"), 500000.0);
  EXPECT_EQ(h.get_int("general.name"), std::nullopt);
  EXPECT_EQ(h.get_string("llama.block_count"), std::nullopt);
  EXPECT_EQ(h.get_int("missing.key"), std::nullopt);
  ASSERT_NE(h.find("general.flag"), nullptr);
  EXPECT_EQ(h.find("general.flag")->as_bool(), true);
  // Small arrays keep their elements, big ones only a summary.
  const auto* kv = h.find("llama.attention.head_count_kv");
  ASSERT_NE(kv, nullptr);
  EXPECT_TRUE(kv->is_array());
  EXPECT_EQ(kv->element_type, GgufType::INT32);
  EXPECT_EQ(kv->length, 3u);
  ASSERT_TRUE(kv->items_stored);
  ASSERT_EQ(kv->items.size(), 3u);
  EXPECT_EQ(kv->items[0].as_int(), 8);
  EXPECT_EQ(kv->items[1].as_int(), -1);
  const auto* tok = h.find("tokenizer.ggml.tokens");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->element_type, GgufType::STRING);
  EXPECT_EQ(tok->length, 2000u);
  EXPECT_FALSE(tok->items_stored);
  EXPECT_TRUE(tok->items.empty());
  EXPECT_EQ(vramplan::gguf_type_name(tok->element_type), "STRING");
}

TEST(GgufHeader, Version2AndCustomAlignment) {
  const std::string bytes = valid_file(3, 64, 2);
  const auto h =
      vramplan::parse_gguf_header(bytes, static_cast<std::int64_t>(bytes.size()), "<mem>");
  EXPECT_EQ(h.version, 2u);
  check_valid(h, 64);
  EXPECT_EQ(h.get_int("general.alignment"), 64);
}

TEST(GgufHeader, StreamsHeaderLargerThanFirstChunk) {
  // ~150k tokens make a ~2.3 MB header: the reader must grow its buffer past 1 MiB.
  TempDir tmp;
  const auto path = tmp.path() / "vocab.gguf";
  write_file(path, valid_file(150000));
  const auto h = vramplan::read_gguf_header(path.string());
  check_valid(h, 32);
  EXPECT_GT(h.data_offset, 2 << 20);
  EXPECT_EQ(h.find("tokenizer.ggml.tokens")->length, 150000u);
}

TEST(GgufHeader, LargeSparseFileReadsOnlyTheHeader) {
  // Q4_K token_embd [4096, 128256]: 16 blocks x 144 B x 128256 rows = 295,501,824 B.
  TempDir tmp;
  const auto path = tmp.path() / "big.gguf";
  Gguf g(1, 1);
  g.kv_str("general.architecture", "llama");
  g.tensor("token_embd.weight", {4096, 128256}, kQ4_K, 0);
  const std::string head = g.finish(0);
  write_file(path, head);
  fs::resize_file(path, head.size() + 295501824u);
  const auto h = vramplan::read_gguf_header(path.string());
  EXPECT_EQ(h.tensor_bytes(), 295501824);
  EXPECT_EQ(h.tensors.at(0).shape, (std::vector<std::int64_t>{128256, 4096}));
}

TEST(GgufHeader, HeaderRegionBeyondReadCapIsAnError) {
  // A UINT8 array of 300 Mi elements in a sparse file: the header region would exceed the
  // 256 MiB read cap, so the streaming reader stops there instead of reading on.
  TempDir tmp;
  const auto path = tmp.path() / "huge_kv.gguf";
  Gguf g(0, 1);
  g.str("k").u32(static_cast<std::uint32_t>(GgufType::ARRAY));
  g.u32(static_cast<std::uint32_t>(GgufType::UINT8)).u64(300u << 20);
  write_file(path, g.bytes());
  fs::resize_file(path, g.bytes().size() + (300u << 20));
  expect_parse_error([&] { vramplan::read_gguf_header(path.string()); },
                     "lies beyond the 256 MiB header read limit");
}

TEST(GgufHeader, ZeroTensorsAndPrefixBuffer) {
  Gguf g(0, 1);
  g.kv_str("general.architecture", "qwen3");
  const std::string bytes = g.bytes();
  const auto h =
      vramplan::parse_gguf_header(bytes, static_cast<std::int64_t>(bytes.size()), "<mem>");
  EXPECT_TRUE(h.tensors.empty());
  EXPECT_EQ(h.architecture(), "qwen3");
  // The pure parser given only a prefix of a longer file says so.
  expect_parse_error(
      [&] {
        vramplan::parse_gguf_header(std::string_view(bytes).substr(0, 30),
                                    static_cast<std::int64_t>(bytes.size()), "<mem>");
      },
      "runs past the end of the 30 bytes given");
}

TEST(GgufHeader, MissingFileIsParseError) {
  expect_parse_error([] { vramplan::read_gguf_header("/nonexistent/model.gguf"); },
                     "cannot read the GGUF file (No such file");
}

// ---------------------------------------------------------------------------------------
// Malformed files.

struct BadCase {
  const char* name;
  std::function<std::string()> make;
  const char* fragment;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

// One valid tensor after `g`'s header: the caller has declared 1 tensor.
std::string with_tensor(Gguf g, const std::vector<std::uint64_t>& ne, std::uint32_t type,
                        std::uint64_t offset, std::uint64_t data_bytes,
                        const std::string& name = "w") {
  g.tensor(name, ne, type, offset);
  return g.finish(data_bytes);
}

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"WrongMagic", [] { return Gguf(0, 0, 3, "GGUX").bytes(); }, "bad magic 'GGUX'"},
      {"SafetensorsFile", [] { return std::string("\x02\0\0\0\0\0\0\0{}", 10); },
       "not a GGUF file"},
      {"TooShortForMagic", [] { return std::string("GG"); }, "GGUF magic (4 bytes) runs past"},
      {"Version1", [] { return Gguf(0, 0, 1).bytes(); }, "GGUF version 1 is not supported"},
      {"Version4", [] { return Gguf(0, 0, 4).bytes(); }, "unsupported GGUF version 4"},
      {"BigEndian", [] { return Gguf(0, 0, 0x03000000).bytes(); }, "big-endian"},
      {"TruncatedCounts", [] { return Gguf(0, 0).bytes().substr(0, 12); },
       "tensor count (8 bytes) runs past the end of the file"},
      {"AbsurdTensorCount", [] { return Gguf(1ull << 40, 0).bytes(); },
       "tensor count 1099511627776 exceeds the limit"},
      {"AbsurdKvCount", [] { return Gguf(0, 0xFFFFFFFFFFFFFFFFull).bytes(); },
       "metadata kv count 18446744073709551615 exceeds the limit"},
      {"KvCountPastEnd", [] { return Gguf(0, 5).kv_u32("a", 1).bytes(); },
       "metadata kv #1 key length (8 bytes) runs past the end of the file"},
      {"KeyLengthPastEnd", [] { return Gguf(0, 1).u64(1000).raw("abc").bytes(); },
       "metadata kv #0 key (1000 bytes) runs past the end of the file"},
      {"StringLengthHuge",
       [] {
         return Gguf(0, 1)
             .str("k")
             .u32(static_cast<std::uint32_t>(GgufType::STRING))
             .u64(0xFFFFFFFFFFFFFF00ull)
             .bytes();
       },
       "exceeds the 16 MiB string limit"},
      {"StringValuePastEnd",
       [] {
         return Gguf(0, 1)
             .str("k")
             .u32(static_cast<std::uint32_t>(GgufType::STRING))
             .u64(64)
             .raw("short")
             .bytes();
       },
       "'k' (64 bytes) runs past the end of the file"},
      {"EmptyKey", [] { return Gguf(0, 1).kv_u32("", 1).bytes(); }, "empty key"},
      {"BadUtf8Key", [] { return Gguf(0, 1).kv_u32("gen\xff", 1).bytes(); },
       "key is not valid UTF-8"},
      {"BadUtf8StringValue",
       [] { return Gguf(0, 1).kv_str("general.name", "bad \xff name").bytes(); },
       "'general.name': string is not valid UTF-8"},
      {"DuplicateKey", [] { return Gguf(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2).bytes(); },
       "duplicate metadata key 'a.b'"},
      {"UnknownValueType", [] { return Gguf(0, 1).str("k").u32(13).u32(0).bytes(); },
       "'k': unknown GGUF value type 13"},
      {"ArrayLengthPastEnd",
       [] {
         return Gguf(0, 1)
             .str("k")
             .u32(static_cast<std::uint32_t>(GgufType::ARRAY))
             .u32(static_cast<std::uint32_t>(GgufType::UINT32))
             .u64(1ull << 50)
             .bytes();
       },
       "array length 1125899906842624 runs past the end of the file"},
      {"StringArrayPastEnd",
       [] {
         return Gguf(0, 1)
             .str("tokenizer.ggml.tokens")
             .u32(static_cast<std::uint32_t>(GgufType::ARRAY))
             .u32(static_cast<std::uint32_t>(GgufType::STRING))
             .u64(3)
             .str("a")
             .str("b")
             .bytes();
       },
       "array length 3 runs past the end of the file"},
      {"UnknownArrayElementType",
       [] {
         return Gguf(0, 1)
             .str("k")
             .u32(static_cast<std::uint32_t>(GgufType::ARRAY))
             .u32(77)
             .u64(0)
             .bytes();
       },
       "unknown array element type 77"},
      {"ArraysNestedTooDeep",
       [] {
         Gguf g(0, 1);
         g.str("k").u32(static_cast<std::uint32_t>(GgufType::ARRAY));
         for (int i = 0; i < 6; ++i) g.u32(static_cast<std::uint32_t>(GgufType::ARRAY)).u64(1);
         return g.u32(0).u64(0).bytes();
       },
       "arrays nested deeper than"},
      {"AlignmentNotPowerOfTwo", [] { return Gguf(0, 1).kv_u32("general.alignment", 48).bytes(); },
       "general.alignment must be a power of two"},
      {"AlignmentZero", [] { return Gguf(0, 1).kv_u32("general.alignment", 0).bytes(); },
       "general.alignment must be a power of two"},
      {"AlignmentString", [] { return Gguf(0, 1).kv_str("general.alignment", "32").bytes(); },
       "general.alignment must be a power of two"},
      {"TensorInfoTruncated", [] { return Gguf(1, 0).str("w").u32(2).u64(8).bytes(); },
       "tensor 'w' ne[1] (8 bytes) runs past the end of the file"},
      {"NDims9",
       [] { return Gguf(1, 0).str("w").u32(9).raw(std::string(9 * 8 + 12, '\1')).bytes(); },
       "tensor 'w': n_dims 9 exceeds 4"},
      {"ZeroDim",
       [] {
         return with_tensor(Gguf(1, 0), {32, 0}, kF32, 0, 0);
       },
       "tensor 'w': dimension ne[1] is zero"},
      {"OverflowShape",
       [] {
         return with_tensor(Gguf(1, 0), {1ull << 32, 1ull << 32}, kF32, 0, 0);
       },
       "element count overflows int64"},
      {"DimAboveInt64", [] { return with_tensor(Gguf(1, 0), {1ull << 63}, kF32, 0, 0); },
       "element count overflows int64"},
      {"OverflowBytes",
       [] {
         return with_tensor(Gguf(1, 0), {1ull << 31, 1ull << 31}, kF32, 0, 0);
       },
       "byte size overflows int64"},
      {"RowBytesOverflow", [] { return with_tensor(Gguf(1, 0), {1ull << 62}, kF32, 0, 0); },
       "byte size overflows int64"},
      {"UnknownGgmlType", [] { return with_tensor(Gguf(1, 0), {32}, 99, 0, 128); },
       "tensor 'w': unknown ggml type 99"},
      {"RemovedGgmlType4", [] { return with_tensor(Gguf(1, 0), {32}, 4, 0, 128); },
       "unknown ggml type 4"},
      {"NonDivisibleQuantRow",
       [] {
         return with_tensor(Gguf(1, 0), {100, 2}, kQ4_K, 0, 1024);
       },
       "row length ne[0] = 100 is not divisible by the Q4_K block of 256"},
      {"NonDivisibleQ8Row", [] { return with_tensor(Gguf(1, 0), {48}, kQ8_0, 0, 1024); },
       "not divisible by the Q8_0 block of 32"},
      {"MisalignedOffset",
       [] {
         Gguf g(2, 0);
         g.tensor("a", {4}, kF32, 0);
         g.tensor("b", {4}, kF32, 16);
         return g.finish(64);
       },
       "tensor 'b': data offset 16 is not aligned to 32"},
      {"MisalignedCustomAlignment",
       [] {
         Gguf g(1, 1);
         g.kv_u32("general.alignment", 256);
         g.tensor("w", {4}, kF32, 32);
         return g.finish(512, 256);
       },
       "is not aligned to 256"},
      {"OffsetPastEnd",
       [] { return with_tensor(Gguf(1, 0), {4}, kF32, 0xFFFFFFFFFFFFFF00ull, 16); },
       "data offset 18446744073709551360 lies past the end of the file"},
      {"DataPastEnd",
       [] {
         return with_tensor(Gguf(1, 0), {64, 64}, kF32, 0, 100);
       },
       "tensor 'w': data [0, +16384) lies past the end of the file (100 data bytes)"},
      {"OverlappingTensors",
       [] {
         Gguf g(2, 0);
         g.tensor("a", {64}, kF32, 0);  // 256 B
         g.tensor("b", {64}, kF32, 128);
         return g.finish(512);
       },
       "tensor 'b' data overlaps tensor 'a'"},
      {"DuplicateTensorName",
       [] {
         Gguf g(2, 0);
         g.tensor("w", {8}, kF32, 0);
         g.tensor("w", {8}, kF32, 32);
         return g.finish(64);
       },
       "duplicate tensor name 'w'"},
      {"BadUtf8TensorName",
       [] { return with_tensor(Gguf(1, 0), {8}, kF32, 0, 32, std::string("w\xc3", 2)); },
       "tensor info #0: name is not valid UTF-8"},
      {"TensorCountPastEnd",
       [] {
         Gguf g(3, 0);
         g.tensor("w", {8}, kF32, 0);
         return g.bytes();
       },
       "tensor info #1 name length (8 bytes) runs past the end of the file"},
  };
  return cases;
}

class GgufMalformed : public ::testing::TestWithParam<BadCase> {};

TEST_P(GgufMalformed, IsParseErrorWithMessage) {
  const BadCase& c = GetParam();
  const std::string bytes = c.make();
  expect_parse_error(
      [&] {
        vramplan::parse_gguf_header(bytes, static_cast<std::int64_t>(bytes.size()), "bad.gguf");
      },
      c.fragment);
  TempDir tmp;
  const auto path = tmp.path() / "bad.gguf";
  write_file(path, bytes);
  expect_parse_error([&] { vramplan::read_gguf_header(path.string()); }, c.fragment);
  try {
    vramplan::read_gguf_header(path.string());
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), path.string());
    EXPECT_GE(e.offset(), 0);
    EXPECT_LE(e.offset(), static_cast<std::int64_t>(bytes.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GgufMalformed, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& p) {
                           return std::string(p.param.name);
                         });

TEST(GgufHeader, BadUtf8StringValueOffsetIsTheByte) {
  // 24 bytes of preamble (magic, version, tensor count, KV count), the key (8-byte length +
  // "general.name", 12 bytes) ends at 44, the type at 48, the string length at 56; "bad " puts
  // the 0xFF at 60. (A stored string becomes a model id: it must be valid UTF-8.)
  const std::string bytes = Gguf(0, 1).kv_str("general.name", "bad \xff name").bytes();
  try {
    vramplan::parse_gguf_header(bytes, static_cast<std::int64_t>(bytes.size()), "x.gguf");
    ADD_FAILURE() << "no ParseError";
  } catch (const vramplan::ParseError& e) {
    EXPECT_EQ(e.offset(), 60);
  }
}

}  // namespace
