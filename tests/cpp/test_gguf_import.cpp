// A GGUF file written by the test (llama architecture, K-quant mix) planned like any model.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf_test_writer.hpp"
#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/gguf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_source.hpp"

using namespace vramplan;

namespace {

using GgufWriter = vramplan_test::GgufTestWriter;

constexpr std::uint32_t kF32 = 0, kQ4K = 12, kQ6K = 14;
// Rows of ne0 = 256 values: Q4_K 144 B, Q6_K 210 B; ne0 = 512: twice that.
std::int64_t q4k(std::int64_t ne0, std::int64_t rows) { return ne0 / 256 * 144 * rows; }
std::int64_t q6k(std::int64_t ne0, std::int64_t rows) { return ne0 / 256 * 210 * rows; }

// h 256, 2 layers, 4 heads / 2 KV heads of 64, ff 512, vocab 100, untied output.
GgufWriter tiny_llama(std::int64_t* total) {
  GgufWriter w;
  w.kv_str("general.architecture", "llama");
  w.kv_str("general.name", "tiny-llama");
  w.kv_u32("llama.block_count", 2);
  w.kv_u32("llama.embedding_length", 256);
  w.kv_u32("llama.feed_forward_length", 512);
  w.kv_u32("llama.attention.head_count", 4);
  w.kv_u32("llama.attention.head_count_kv", 2);
  w.kv_u32("llama.context_length", 4096);
  std::int64_t sum = 0;
  auto add = [&](const std::string& name, std::int64_t ne0, std::int64_t ne1, std::uint32_t type,
                 std::int64_t bytes) {
    w.tensor(name, static_cast<std::uint64_t>(ne0), static_cast<std::uint64_t>(ne1), type, bytes);
    sum += bytes;
  };
  add("token_embd.weight", 256, 100, kQ4K, q4k(256, 100));
  add("output.weight", 256, 100, kQ6K, q6k(256, 100));
  add("output_norm.weight", 256, 0, kF32, 256 * 4);
  for (int i = 0; i < 2; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_q.weight", 256, 256, kQ4K, q4k(256, 256));
    add(p + "attn_k.weight", 256, 128, kQ4K, q4k(256, 128));
    add(p + "attn_v.weight", 256, 128, kQ6K, q6k(256, 128));
    add(p + "attn_output.weight", 256, 256, kQ4K, q4k(256, 256));
    add(p + "ffn_gate.weight", 256, 512, kQ4K, q4k(256, 512));
    add(p + "ffn_up.weight", 256, 512, kQ4K, q4k(256, 512));
    add(p + "ffn_down.weight", 512, 256, kQ6K, q6k(512, 256));
    add(p + "attn_norm.weight", 256, 0, kF32, 256 * 4);
    add(p + "ffn_norm.weight", 256, 0, kF32, 256 * 4);
  }
  *total = sum;
  return w;
}

}  // namespace

TEST(GgufImport, TinyLlamaPlansFromItsFile) {
  vramplan_test::TempDir dir("gguf_import");
  std::int64_t written = 0;
  const GgufWriter w = tiny_llama(&written);
  const auto path = dir.path() / "tiny.gguf";
  vramplan_test::write_file(path, w.bytes());
  const LoadedModel m = load_model_path(path.string());
  EXPECT_EQ(m.kind, "gguf");
  EXPECT_EQ(m.checkpoint_bytes, written);  // exact: the bytes the test wrote
  const ModelSpec& s = m.spec;
  EXPECT_EQ(s.num_hidden_layers, 2);
  EXPECT_EQ(s.num_key_value_heads, 2);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.vocab_size, 100);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(s.quantization.method, QuantMethod::Gguf);
  EXPECT_EQ(s.quantization.gguf_types.at("default"), DType::Q4_K);
  EXPECT_EQ(s.quantization.gguf_types.at("lm_head"), DType::Q6_K);
  EXPECT_EQ(s.quantization.gguf_types.at("mlp_down"), DType::Q6_K);
  // KV in the served bf16: 2 layers x 2 (K, V) x 2 heads x 64 x 2 B.
  EXPECT_EQ(kv_bytes_per_token(s, KvCacheOptions{}), 1024);
  EXPECT_EQ(s.id, path.string());  // `vllm serve <file>.gguf`
}

TEST(GgufImport, UnknownArchitectureAndMissingKeysFailClosed) {
  vramplan_test::TempDir dir("gguf_import");
  GgufWriter rwkv;
  rwkv.kv_str("general.architecture", "rwkv6");
  vramplan_test::write_file(dir.path() / "rwkv.gguf", rwkv.bytes());
  try {
    (void)load_model_path((dir.path() / "rwkv.gguf").string());
    FAIL() << "accepted an unknown architecture";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("general.architecture"), std::string::npos);
  }
  GgufWriter partial;
  partial.kv_str("general.architecture", "llama");
  partial.kv_u32("llama.embedding_length", 256);
  vramplan_test::write_file(dir.path() / "partial.gguf", partial.bytes());
  try {
    (void)load_model_path((dir.path() / "partial.gguf").string());
    FAIL() << "accepted a file without head counts";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("llama.attention.head_count"), std::string::npos)
        << e.what();
  }
}
