#pragma once

#include <string>

#include "vramplan/spec_db.hpp"

namespace vramplan_test {

constexpr double kGiB = 1073741824.0;

// Specs written inline in tests, from the public config.json values quoted beside them.
inline vramplan::ModelSpec spec_from_yaml(const std::string& yaml) {
  return vramplan::parse_model_spec_yaml(yaml, "<test>");
}

// Llama-3.1-8B, from shared/reference/configs/meta-llama__Meta-Llama-3.1-8B.json.
inline const char* kLlama31_8B = R"(
id: test/llama-3.1-8b
model_type: llama
hidden_size: 4096
num_hidden_layers: 32
num_attention_heads: 32
num_key_value_heads: 8
intermediate_size: 14336
vocab_size: 128256
max_position_embeddings: 131072
torch_dtype: bfloat16
)";

inline vramplan::GpuSpec h100() {
  vramplan::GpuSpec g;
  g.id = "H100-80GB";
  g.name = "NVIDIA H100 80GB HBM3";
  g.vendor = "nvidia";
  g.total_memory_bytes = 85029158912;  // 79.19 GiB as vLLM 0.19 logs it
  g.compute_capability = 9.0;
  return g;
}

}  // namespace vramplan_test
