#include "vramplan/dtype.hpp"

#include <array>
#include <limits>

#include "vramplan/text_scan.hpp"

namespace vramplan {
namespace {

// (dtype, name, elements per block, bytes per block, ggml id). GGUF rows follow
// gguf-py GGML_QUANT_SIZES (QK_K = 256); the byte split of each block is in the comment.
constexpr std::array<DTypeInfo, 38> kDTypeTable = {{
    {DType::F64, "F64", 1, 8, 28},
    {DType::F32, "F32", 1, 4, 0},
    {DType::F16, "F16", 1, 2, 1},
    {DType::BF16, "BF16", 1, 2, 30},
    {DType::F8_E4M3, "F8_E4M3", 1, 1, -1},
    {DType::F8_E5M2, "F8_E5M2", 1, 1, -1},
    {DType::F8_E8M0, "F8_E8M0", 1, 1, -1},
    {DType::I64, "I64", 1, 8, 27},
    {DType::I32, "I32", 1, 4, 26},
    {DType::I16, "I16", 1, 2, 25},
    {DType::I8, "I8", 1, 1, 24},
    {DType::U8, "U8", 1, 1, -1},
    {DType::BOOL, "BOOL", 1, 1, -1},
    {DType::Q4_0, "Q4_0", 32, 2 + 16, 2},              // fp16 d + 32 nibbles
    {DType::Q4_1, "Q4_1", 32, 2 + 2 + 16, 3},          // d + m + nibbles
    {DType::Q5_0, "Q5_0", 32, 2 + 4 + 16, 6},          // d + high bits + nibbles
    {DType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16, 7},      // d + m + high bits + nibbles
    {DType::Q8_0, "Q8_0", 32, 2 + 32, 8},              // d + 32 int8
    {DType::Q8_1, "Q8_1", 32, 4 + 4 + 32, 9},          // fp32 d + fp32 s + 32 int8
    {DType::Q2_K, "Q2_K", 256, 2 + 2 + 16 + 64, 10},   // d + dmin + scales + quants
    {DType::Q3_K, "Q3_K", 256, 2 + 64 + 32 + 12, 11},  // d + quants + hmask + scales
    {DType::Q4_K, "Q4_K", 256, 2 + 2 + 12 + 128, 12},  // d + dmin + 6-bit scales + quants
    {DType::Q5_K, "Q5_K", 256, 2 + 2 + 12 + 32 + 128, 13},
    {DType::Q6_K, "Q6_K", 256, 128 + 64 + 16 + 2, 14},  // ql + qh + int8 scales + d
    {DType::Q8_K, "Q8_K", 256, 4 + 256 + 32, 15},       // fp32 d + quants + bsums
    {DType::IQ2_XXS, "IQ2_XXS", 256, 66, 16},
    {DType::IQ2_XS, "IQ2_XS", 256, 74, 17},
    {DType::IQ3_XXS, "IQ3_XXS", 256, 98, 18},
    {DType::IQ1_S, "IQ1_S", 256, 50, 19},
    {DType::IQ4_NL, "IQ4_NL", 32, 18, 20},
    {DType::IQ3_S, "IQ3_S", 256, 110, 21},
    {DType::IQ2_S, "IQ2_S", 256, 82, 22},
    {DType::IQ4_XS, "IQ4_XS", 256, 2 + 2 + 4 + 128, 23},  // d + scales_h + scales_l + quants
    {DType::IQ1_M, "IQ1_M", 256, 56, 29},
    {DType::TQ1_0, "TQ1_0", 256, 54, 34},
    {DType::TQ2_0, "TQ2_0", 256, 66, 35},
    {DType::MXFP4, "MXFP4", 32, 1 + 16, 39},  // E8M0 scale + 32 fp4
    {DType::NVFP4, "NVFP4", 64, 4 + 32, 40},  // 4 fp8 scales (group 16) + 64 fp4
}};

struct Alias {
  std::string_view name;
  DType dtype;
};

// Torch / HF / vLLM spellings of the same element types.
constexpr std::array<Alias, 16> kAliases = {{
    {"float64", DType::F64},
    {"double", DType::F64},
    {"float32", DType::F32},
    {"float", DType::F32},
    {"fp32", DType::F32},
    {"float16", DType::F16},
    {"half", DType::F16},
    {"fp16", DType::F16},
    {"bfloat16", DType::BF16},
    {"bf16", DType::BF16},
    {"fp8", DType::F8_E4M3},
    {"fp8_e4m3", DType::F8_E4M3},
    {"float8_e4m3fn", DType::F8_E4M3},
    {"fp8_e5m2", DType::F8_E5M2},
    {"int8", DType::I8},
    {"uint8", DType::U8},
}};

}  // namespace

const DTypeInfo& dtype_info(DType dtype) noexcept {
  return kDTypeTable[static_cast<std::size_t>(dtype)];
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (const auto& row : kDTypeTable) {
    if (text::equals_ignoring_case(row.name, name)) return row.dtype;
  }
  for (const auto& alias : kAliases) {
    if (text::equals_ignoring_case(alias.name, name)) return alias.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_ggml_type(std::int64_t ggml_type_id) noexcept {
  for (const auto& row : kDTypeTable) {
    if (row.ggml_type_id >= 0 && row.ggml_type_id == ggml_type_id) return row.dtype;
  }
  return std::nullopt;
}

std::int64_t dtype_bytes_for_elements(DType dtype, std::int64_t elements) noexcept {
  const auto& info = dtype_info(dtype);
  if (elements < 0) return -1;
  const std::int64_t blocks =
      elements / info.block_elements + (elements % info.block_elements != 0 ? 1 : 0);
  if (blocks > std::numeric_limits<std::int64_t>::max() / info.block_bytes) return -1;
  return blocks * info.block_bytes;
}

}  // namespace vramplan
