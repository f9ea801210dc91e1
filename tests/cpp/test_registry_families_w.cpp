// Whisper (WhisperForConditionalGeneration) as vLLM 0.33 builds and caches it (issue 36, helper
// w): vllm/model_executor/models/whisper.py builds the decoder's layers with a self-attention
// (Attention, a FullAttentionSpec) and a cross-attention to the encoder output (CrossAttention,
// model_executor/layers/attention/cross_attention.py: a CrossAttentionSpec of the same heads).
// vLLM's KV-cache manager puts the two specs in two groups (kv_cache_spec_registry: a
// CrossAttentionSpec groups only with its own kind; equal pages, 32 layers each), and sizes the
// cross group by CrossAttentionSpec.max_memory_usage_bytes: cdiv(max_num_encoder_input_tokens,
// block_size) pages a layer, where SchedulerConfig sets max_num_encoder_input_tokens to
// max_num_batched_tokens (config/scheduler.py), whatever max_model_len. The startup check
// (kv_cache_planning.check_enough_kv_cache_memory) and the logged "Maximum concurrency"
// (kv_cache_utils.get_max_concurrency_for_kv_cache_config) both count it so. Bytes and
// parameters below are derived by hand from those files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/architectures.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::bf16_kv_options;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

namespace {

constexpr const char* kLargeV3 = "openai__whisper-large-v3.json";

ModelSpec large_v3() { return load_hf_config(config_path(kLargeV3)); }

}  // namespace

// The decoder is the text model: 32 layers (decoder_layers; the config's num_hidden_layers is
// the encoder's) of 20 heads x 64 (d_model 1,280 / 20), KV heads = heads; max_model_len 448
// (max_target_positions, vLLM's derive_max_model_len key for Whisper). Every layer keeps a
// cross-attention cache beside its self-attention, over the encoder's 1,500 output tokens.
TEST(RegistryFamiliesW, WhisperDecoderLayout) {
  const ModelSpec spec = large_v3();
  EXPECT_EQ(spec.model_type, "whisper");
  EXPECT_EQ(spec.hidden_size, 1280);
  EXPECT_EQ(spec.num_hidden_layers, 32);
  EXPECT_EQ(spec.num_attention_heads, 20);
  EXPECT_EQ(spec.num_key_value_heads, 20);
  EXPECT_EQ(spec.head_dim, 64);
  EXPECT_EQ(spec.intermediate_size, 5120);
  EXPECT_EQ(spec.max_position_embeddings, 448);
  EXPECT_EQ(spec.position_embeddings, 448);
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_FALSE(spec.gated_mlp);
  EXPECT_EQ(spec.vision.modality, "audio");
  ASSERT_EQ(spec.layers.size(), 32U);
  for (const LayerSpec& layer : spec.layers) {
    EXPECT_EQ(layer.attention, AttentionKind::Full);
    EXPECT_EQ(layer.beside, AttentionKind::CrossAttention);
    EXPECT_EQ(layer.beside_window, 1500);
  }
}

// KV bytes per token (those that grow with the request's tokens): the self-attention's K and V,
// 2 x 20 heads x 64 x 2 B = 5,120 B a layer, 32 layers: 163,840 B. TP 4 (20 heads split in
// fives): 40,960 B. The cross-attention cache holds as much per encoder token but is a fixed
// cost per request (below), not a per-token one.
TEST(RegistryFamiliesW, WhisperKvBytesPerTokenByHand) {
  const ModelSpec spec = large_v3();
  EXPECT_EQ(kv_bf16(spec), 163840);
  EXPECT_EQ(kv_bf16(spec, 4), 40960);
}

// Two groups of 32 layers (full attention; cross-attention over 1,500 encoder tokens), one pool
// of 32 tensors. A page at block size 16 in bf16: 16 x 2 x 20 x 64 x 2 B = 81,920 B, the same for
// both kinds. One request at max_model_len 448 and max_num_batched_tokens 8,192: the
// self-attention group cdiv(448, 16) = 28 blocks, the cross group cdiv(8,192, 16) = 512 (a 30 s
// clip's 1,500 frames would take only cdiv(1,500, 16) = 94, but the startup check and the
// concurrency reserve the budget): 540 blocks x 81,920 B x 32 tensors = 1,415,577,600 B,
// vLLM's sum over layers: 32 x 28 x 81,920 + 32 x 512 x 81,920 = 73,400,320 + 1,342,177,280.
// At 2,048 batched tokens: 28 + 128 = 156 blocks.
TEST(RegistryFamiliesW, WhisperCrossAttentionGroupIsAFixedCostPerRequest) {
  const ModelSpec spec = large_v3();
  const KvGeometry geometry = kv_geometry(spec, bf16_kv_options());
  EXPECT_FALSE(geometry.uniform);
  EXPECT_EQ(geometry.group_size, 32);
  EXPECT_EQ(geometry.padding_layers, 0);
  ASSERT_EQ(geometry.groups.size(), 2U);
  int cross = 0;
  for (const KvGroup& group : geometry.groups) {
    EXPECT_EQ(group.num_layers, 32);
    EXPECT_EQ(group.block_multiplier, 1);
    if (group.kind == AttentionKind::CrossAttention) {
      EXPECT_EQ(group.window, 1500);
      ++cross;
    } else {
      EXPECT_EQ(group.kind, AttentionKind::Full);
    }
  }
  EXPECT_EQ(cross, 1);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.page_bytes, 81920);
  EXPECT_EQ(page.bytes_per_token, 163840);
  EXPECT_EQ(kv_blocks_per_request(geometry, page, 448, 8192), 28 + 512);
  EXPECT_EQ(kv_request_bytes(geometry, page, 448, 8192), std::int64_t{1415577600});
  EXPECT_EQ(kv_blocks_per_request(geometry, page, 448, 2048), 28 + 128);
  // The cross group does not shrink with the context: 16 tokens still need the 512 blocks.
  EXPECT_EQ(kv_blocks_per_request(geometry, page, 16, 8192), 1 + 512);
  // vLLM's estimate_max_model_len over a budget of 519 blocks' bytes: 512 go to the encoder
  // budget, 7 blocks of 16 tokens hold 112.
  const std::int64_t budget = std::int64_t{519} * 81920 * 32;
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, budget, 448, 8192), 112);
}

// Parameters as vLLM 0.33 builds them. The published count of the checkpoint, 1,543,490,560
// (SOURCES.md), by hand: encoder conv1 1,280 x 128 x 3 + 1,280 = 492,800, conv2 1,280 x 1,280 x 3
// + 1,280 = 4,916,480, positions 1,500 x 1,280 = 1,920,000; per layer q/v/out 3 x (1,280^2 +
// 1,280) + k 1,280^2 = 6,557,440, fc1 + fc2 2 x 1,280 x 5,120 + 5,120 + 1,280 = 13,113,600, two
// LayerNorms 5,120: 19,676,160, 32 layers 629,637,120; final LayerNorm 2,560: 636,968,960.
// Decoder: tokens 51,866 x 1,280 = 66,388,480 (proj_out tied), positions 448 x 1,280 = 573,440;
// per layer self- and cross-attention 2 x 6,557,440, fc1 + fc2 13,113,600, three LayerNorms
// 7,680: 26,236,160, 32 layers 839,557,120; final LayerNorm 2,560: 906,521,600. Sum
// 1,543,490,560. vLLM's fused qkv_proj (encoder and decoder self-attention) and kv_proj
// (cross-attention) carry the k bias the loader fills with zeros (_create_fake_bias_for_k_proj):
// 96 x 1,280 = 122,880 more; the spec's final norm is one hidden_size vector (its bias, 1,280,
// uncounted, as for GPT-2 and OPT): 1,543,612,160. The encoder is the audio tower: 636,968,960
// + 32 x 1,280 = 637,009,920.
TEST(RegistryFamiliesW, WhisperLargeV3ParametersByHand) {
  const ModelSpec spec = large_v3();
  const std::int64_t d = 1280;
  const std::int64_t published = 1543490560;
  EXPECT_EQ(spec.vision.num_parameters, std::int64_t{636968960} + 32 * d);
  EXPECT_EQ(parameter_count(spec), published + 96 * d - d);
  // The same by the module shapes.
  const std::int64_t attention = 3 * linear(d, d, true) + linear(d, d, false);
  const std::int64_t mlp = linear(d, 5120, true) + linear(5120, d, true);
  const std::int64_t encoder = linear(128 * 3, d, true) + linear(d * 3, d, true) + 1500 * d +
                               32 * (attention + mlp + 2 * 2 * d) + 2 * d;
  const std::int64_t decoder = 51866 * d + 448 * d + 32 * (2 * attention + mlp + 3 * 2 * d) + 2 * d;
  EXPECT_EQ(encoder + decoder, published);
}

// openai/whisper-large-v3-turbo is large-v3 with 4 decoder layers (decoder_layers 4, the rest
// alike): published 808,878,080 = 636,968,960 + 66,388,480 + 573,440 + 4 x 26,236,160 + 2,560;
// vLLM's zero k biases (32 + 2 x 4) x 1,280 = 51,200 more, the final norm's bias 1,280 less.
TEST(RegistryFamiliesW, WhisperTurboParametersByHand) {
  nlohmann::json config = config_json(kLargeV3);
  config["decoder_layers"] = 4;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "turbo.json");
  EXPECT_EQ(spec.num_hidden_layers, 4);
  EXPECT_EQ(parameter_count(spec), std::int64_t{808878080} + 40 * 1280 - 1280);
  EXPECT_EQ(kv_bf16(spec), 4 * 5120);
}

// A plan on an H100 at vLLM 0.33: the startup check's request and the concurrency count the
// cross group's 512 blocks beside the 28 of a 448-token request (max_num_batched_tokens 8,192
// given); the audio encoder's profile and the encoder-decoder graph capture are not modelled, and
// the plan says so.
TEST(RegistryFamiliesW, WhisperPlanCountsTheCrossGroupAndNamesTheAudioProfile) {
  const auto spec = std::make_shared<const ModelSpec>(large_v3());
  EngineConfig config;
  config.engine_version = "0.33.0";
  config.max_num_batched_tokens = 8192;
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  const CompiledLaunch launch(spec, hw, config);
  const Breakdown b = launch.breakdown(launch_knobs(config));
  EXPECT_EQ(b.outcome, Outcome::Started);
  EXPECT_EQ(b.request_kv_bytes, std::int64_t{1415577600});
  ASSERT_GT(b.num_blocks, 0);
  EXPECT_DOUBLE_EQ(b.max_concurrency, static_cast<double>(b.num_blocks) / 540.0);
  EXPECT_EQ(std::count_if(b.messages.begin(), b.messages.end(),
                          [](const std::string& m) {
                            return m.find("vLLM's audio profile") != std::string::npos;
                          }),
            1);
  EXPECT_EQ(std::count_if(b.messages.begin(), b.messages.end(),
                          [](const std::string& m) {
                            return m.find("cross-attention KV") != std::string::npos &&
                                   m.find("fills 1500") != std::string::npos;
                          }),
            1);
  EXPECT_EQ(std::count_if(b.messages.begin(), b.messages.end(),
                          [](const std::string& m) {
                            return m.find("FULL_DECODE_ONLY") != std::string::npos;
                          }),
            1);
}

// The cross-attention key excludes the other caches beside a layer's attention.
TEST(RegistryFamiliesW, CrossAttentionBesideAnotherCacheIsRefused) {
  const std::string yaml = std::string(vramplan_test::kLlama31_8B) +
                           "cross_attention_encoder_tokens: 1500\n" + "loop_window: 64\n";
  try {
    (void)vramplan_test::spec_from_yaml(yaml);
    ADD_FAILURE() << "planned";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "cross_attention_encoder_tokens") << e.what();
  }
}

// Encoder-decoder models run without chunked multimodal input (SchedulerConfig sets
// disable_chunked_mm_input), and vLLM's compute_mm_encoder_budget refuses a batch budget below
// one item's encoder tokens: Whisper's 1,500 (get_num_audio_tokens, max_source_positions).
TEST(RegistryFamiliesW, WhisperBatchBelowOneAudioItemIsRefused) {
  const auto spec = std::make_shared<const ModelSpec>(large_v3());
  EngineConfig config;
  config.engine_version = "0.33.0";
  config.max_num_batched_tokens = 1024;
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  EXPECT_EQ(vramplan_test::config_error_of([&] { (void)CompiledLaunch(spec, hw, config); }).field(),
            "max_num_batched_tokens");
  config.max_num_batched_tokens = 1500;
  EXPECT_NO_THROW((void)CompiledLaunch(spec, hw, config));
}

// whisper.py's embed_tokens is a plain nn.Embedding (not a VocabParallelEmbedding): its 51,866
// rows, unpadded, on every tensor-parallel rank.
TEST(RegistryFamiliesW, WhisperTokenEmbeddingIsReplicated) {
  const ModelSpec spec = large_v3();
  EXPECT_TRUE(spec.replicated_token_embedding);
  int tables = 0;
  for (const TensorGroup& group : model_tensor_groups(spec)) {
    if (group.role != TensorRole::Embedding || group.rows != 51866) continue;
    EXPECT_EQ(group.split, TensorSplit::Replicated);
    EXPECT_EQ(group.cols, 1280);
    ++tables;
  }
  EXPECT_EQ(tables, 1);
}
