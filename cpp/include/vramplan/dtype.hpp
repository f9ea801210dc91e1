// One table of storage types: element types (fp32/bf16/fp8/int8/...) and GGUF block types,
// each as (elements per block, bytes per block). Scale bytes of block formats are part of
// the block, as in llama.cpp's GGML_QUANT_SIZES table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vramplan {

enum class DType : std::uint8_t {
  F64,
  F32,
  F16,
  BF16,
  F8_E4M3,
  F8_E5M2,
  F8_E8M0,  // UE8M0 scales (MXFP4, DeepSeek UE8M0 block scales)
  I64,
  I32,
  I16,
  I8,
  U8,
  BOOL,
  // GGUF block types (ggml_type ids in the table).
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q8_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  Q8_K,
  IQ2_XXS,
  IQ2_XS,
  IQ3_XXS,
  IQ1_S,
  IQ4_NL,
  IQ3_S,
  IQ2_S,
  IQ4_XS,
  IQ1_M,
  TQ1_0,
  TQ2_0,
  MXFP4,
  NVFP4,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;        // our canonical name (safetensors spelling for plain types)
  std::int32_t block_elements;  // elements per block (1 for plain element types)
  std::int32_t block_bytes;     // bytes per block, scales included
  std::int32_t ggml_type_id;    // ggml_type id, -1 if the type does not exist in GGUF
};

// Table entry for a dtype. Never fails: every enumerator has a row.
const DTypeInfo& dtype_info(DType dtype) noexcept;

// Parse a dtype name: safetensors names ("BF16", "F8_E4M3"), torch names ("bfloat16",
// "float16", "float32", "fp8"), GGUF names ("Q4_K", "q4_k"). Case-insensitive.
std::optional<DType> parse_dtype(std::string_view name) noexcept;

// DType for a ggml_type id as written in a GGUF tensor info, if known.
std::optional<DType> dtype_from_ggml_type(std::int64_t ggml_type_id) noexcept;

// Bytes of `elements` values stored in `dtype`, rounding up to whole blocks. Returns -1 on
// overflow. Callers that need exactness (GGUF rows) check divisibility themselves.
std::int64_t dtype_bytes_for_elements(DType dtype, std::int64_t elements) noexcept;

}  // namespace vramplan
