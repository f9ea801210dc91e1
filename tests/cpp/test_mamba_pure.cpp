// Attention-free Mamba models as vLLM 0.33 builds them (vllm/model_executor/models/mamba.py for
// MambaForCausalLM and FalconMambaForCausalLM, mamba2.py for Mamba2ForCausalLM): every layer an
// RMSNorm and a mixer (no attention, no MLP), then norm_f and lm_head (tied per
// tie_word_embeddings: MambaConfig defaults true, Mamba2Config false).
//
// State per layer and sequence (mamba_utils.py): Mamba-1 conv (inner / TP) x (d_conv - 1), SSM
// (inner / TP) x d_state; Mamba2 conv (inner + 2 x n_groups x d_state) / TP x (d_conv - 1 +
// speculative tokens), SSM (heads / TP) x head_dim x d_state. Dtypes (_mamba_state_dtype): the
// conv state takes --mamba-cache-dtype, else the served dtype; the SSM state
// --mamba-ssm-cache-dtype, else the conv state's (MambaModelConfig sets no override).
//
// The configs name no context key, so vLLM's max_model_len is 2048 unless --max-model-len is
// given (_get_and_verify_max_len). Prefix caching is off by default for attention-free models,
// so mamba_cache_mode is "none" and a sequence holds 1 + speculative state blocks; the pool is
// one group of every layer (UniformTypeKVCacheSpecs) and max concurrency is its block count.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/solver.hpp"

using namespace vramplan;
using vramplan_test::bf16_kv_options;
using vramplan_test::config_path;

namespace {

constexpr const char* kMamba130m = "state-spaces__mamba-130m-hf.json";
constexpr const char* kFalconMamba7b = "tiiuae__falcon-mamba-7b.json";
constexpr const char* kCodestralMamba = "mistralai__Mamba-Codestral-7B-v0.1.json";

// A state's bytes over the whole model (every layer is a Mamba layer).
std::int64_t state_bytes_per_sequence(const ModelSpec& spec, const KvCacheOptions& o) {
  return mamba_state_bytes(spec, spec.layers[0], o) * spec.num_hidden_layers;
}

}  // namespace

// mamba-130m-hf: 24 Mamba-1 layers, no heads, no context key: vLLM's max_model_len 2048.
TEST(MambaPure, Mamba130mLayoutHasNoAttentionAndVllmsDefaultContext) {
  const ModelSpec spec = load_hf_config(config_path(kMamba130m));
  EXPECT_EQ(spec.model_type, "mamba");
  EXPECT_EQ(spec.num_attention_heads, 0);
  EXPECT_EQ(spec.max_position_embeddings, 2048);
  EXPECT_TRUE(spec.tie_word_embeddings);  // MambaConfig's default; the config does not say
  ASSERT_EQ(spec.layers.size(), 24U);
  for (const LayerSpec& layer : spec.layers) {
    EXPECT_EQ(layer.attention, AttentionKind::Mamba);
    EXPECT_FALSE(layer.mlp);
  }
  EXPECT_EQ(spec.mamba.version, 1);
  EXPECT_EQ(spec.mamba.intermediate_size, 1536);
  EXPECT_EQ(spec.mamba.time_step_rank, 48);
  EXPECT_FALSE(spec.mamba.dt_bc_norm_weights);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 0);
}

// Parameters by hand (h 768, inner 1,536, dt_rank 48, d_state 16, d_conv 4, vocab 50,280, tied):
//   per layer: in_proj 3,072 x 768 = 2,359,296; conv1d 1,536 x (4 + 1) = 7,680; x_proj
//   (48 + 32) x 1,536 = 122,880; dt_proj 1,536 x (48 + 1) = 75,264; A 1,536 x 16 = 24,576;
//   D 1,536; out_proj 768 x 1,536 = 1,179,648; norm 768: 3,771,648.
//   24 x 3,771,648 + embeddings 50,280 x 768 (lm_head tied) + norm_f 768 = 129,135,360: the
//   float32 checkpoint holds 4 x that = 516,541,440 B.
TEST(MambaPure, Mamba130mParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kMamba130m));
  EXPECT_EQ(parameter_count(spec), 129135360);
  EXPECT_EQ(4 * parameter_count(spec), 516541440);
}

// Per layer, the float32 config served bf16 (--dtype auto downcasts), inner 1,536:
//   conv 1,536 x 3 x 2 B = 9,216; SSM 1,536 x 16 x 2 B = 49,152 (auto: the conv dtype):
//   58,368 B; 24 layers: 1,400,832 B per sequence.
//   --mamba-ssm-cache-dtype float32: 9,216 + 1,536 x 16 x 4 = 107,520.
//   --mamba-cache-dtype float32 (SSM auto follows it): 18,432 + 98,304 = 116,736.
//   TP 2: 768 channels: 4,608 + 24,576 = 29,184.
TEST(MambaPure, Mamba130mStateBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kMamba130m));
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 58368);
  EXPECT_EQ(state_bytes_per_sequence(spec, bf16_kv_options()), 1400832);
  KvCacheOptions fp32_ssm = bf16_kv_options();
  fp32_ssm.ssm_state_element_bytes = 4;
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], fp32_ssm), 107520);
  KvCacheOptions fp32_conv = bf16_kv_options();
  fp32_conv.state_element_bytes = 4;
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], fp32_conv), 116736);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options(2)), 29184);
}

// The pool: one group of all 24 layers, a page of one layer's state (58,368 B), a sequence
// one block at any length (and 1 + k with k speculative tokens).
TEST(MambaPure, Mamba130mOneStateBlockPerSequenceAtAnyLength) {
  const ModelSpec spec = load_hf_config(config_path(kMamba130m));
  const KvGeometry geometry = kv_geometry(spec, bf16_kv_options());
  EXPECT_EQ(geometry.group_size, 24);
  ASSERT_EQ(geometry.groups.size(), 1U);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.page_bytes, 58368);
  EXPECT_EQ(kv_request_bytes(geometry, page, 2048, 2048), 1400832);
  EXPECT_EQ(kv_request_bytes(geometry, page, 1 << 20, 8192), 1400832);
  KvCacheOptions speculative = bf16_kv_options();
  speculative.num_speculative_tokens = 2;
  const KvGeometry spec_geometry = kv_geometry(spec, speculative);
  EXPECT_EQ(kv_request_bytes(spec_geometry, kv_page(spec_geometry, 16, 2), 2048, 2048),
            3 * 1400832);
}

// A launch on an H100 at vLLM's defaults: max_model_len 2048 (no context key), and as many
// sequences as whole states fit in the KV budget: num_blocks = floor(budget / 1,400,832), the
// max concurrency that many (one block each), the token capacity that times 2,048.
TEST(MambaPure, Mamba130mPlannedConcurrencyIsTheStateCount) {
  const ModelSpec spec = load_hf_config(config_path(kMamba130m));
  HardwareConfig hardware;
  hardware.gpu = vramplan_test::h100();
  EngineConfig config;
  config.engine_version = "0.33.0";
  const Breakdown b = compute_breakdown(spec, hardware, config);
  ASSERT_EQ(b.outcome, Outcome::Started);
  EXPECT_EQ(b.config.max_model_len, 2048);
  const RankBreakdown& rank = b.ranks.at(0);
  ASSERT_GT(rank.kv_cache_bytes, 0);
  EXPECT_EQ(b.num_blocks, rank.kv_cache_bytes / 1400832);
  EXPECT_DOUBLE_EQ(b.max_concurrency, static_cast<double>(b.num_blocks));
  EXPECT_EQ(b.kv_tokens, b.num_blocks * 2048);
}

// FalconMamba-7B (bf16, inner 8,192 from the config beside expand 16, dt_rank 256, untied):
//   per layer: in_proj 16,384 x 4,096 = 67,108,864; conv1d 8,192 x 5 = 40,960; x_proj
//   (256 + 32) x 8,192 = 2,359,296; dt_proj 8,192 x 257 = 2,105,344; A 131,072; D 8,192;
//   out_proj 4,096 x 8,192 = 33,554,432; norm 4,096; the dt/B/C RMSNorms have no weights:
//   105,312,256. 64 layers: 6,739,984,384; embeddings + lm_head 2 x 65,024 x 4,096 =
//   532,676,608; norm_f 4,096: 7,272,665,088.
TEST(MambaPure, FalconMamba7bParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kFalconMamba7b));
  EXPECT_EQ(spec.model_type, "falcon_mamba");
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.mamba.intermediate_size, 8192);
  EXPECT_FALSE(spec.mamba.dt_bc_norm_weights);
  EXPECT_EQ(parameter_count(spec), std::int64_t{7272665088});
}

// FalconMamba-7B state per layer (bf16): conv 8,192 x 3 x 2 = 49,152; SSM 8,192 x 16 x 2 =
// 262,144: 311,296; 64 layers: 19,922,944 B per sequence. TP 2: 155,648 per layer.
TEST(MambaPure, FalconMamba7bStateBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kFalconMamba7b));
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 311296);
  EXPECT_EQ(state_bytes_per_sequence(spec, bf16_kv_options()), 19922944);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options(2)), 155648);
}

// Mamba-Codestral-7B (Mamba2: h 4,096, 128 heads x 64, 8 groups, d_state 128, d_conv 4, vocab
// 32,768, untied): per layer in_proj (2 x 8,192 + 2 x 8 x 128 + 128) x 4,096 = 76,021,760;
// conv1d (8,192 + 2,048) x (4 + 1) = 51,200; A, D, dt_bias 3 x 128 = 384; gated norm 8,192;
// out_proj 4,096 x 8,192 = 33,554,432; norm 4,096: 109,640,064. 64 layers: 7,016,964,096;
// embeddings + lm_head 2 x 32,768 x 4,096 = 268,435,456; norm_f 4,096: 7,285,403,648.
TEST(MambaPure, CodestralMambaParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kCodestralMamba));
  EXPECT_EQ(spec.model_type, "mamba2");
  EXPECT_EQ(spec.num_attention_heads, 0);
  EXPECT_EQ(spec.max_position_embeddings, 2048);
  EXPECT_EQ(spec.mamba.version, 2);
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(parameter_count(spec), std::int64_t{7285403648});
}

// Codestral Mamba state per layer (bf16): conv (8,192 + 2 x 8 x 128) x 3 x 2 = 61,440; SSM
// 128 x 64 x 128 x 2 = 2,097,152: 2,158,592; 64 layers: 138,149,888 B per sequence.
// TP 2: 30,720 + 1,048,576 = 1,079,296. Two speculative tokens add two conv columns:
// 10,240 x 5 x 2 = 102,400 + 2,097,152 = 2,199,552.
TEST(MambaPure, CodestralMambaStateBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kCodestralMamba));
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 2158592);
  EXPECT_EQ(state_bytes_per_sequence(spec, bf16_kv_options()), 138149888);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options(2)), 1079296);
  KvCacheOptions speculative = bf16_kv_options();
  speculative.num_speculative_tokens = 2;
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], speculative), 2199552);
}

// What vLLM cannot build (or vramplan does not model) is refused by the key's name. The configs
// are edited as text and loaded from a file: Codestral's time_step_limit holds Python's
// Infinity, which only the config reader accepts.
TEST(MambaPure, UnbuildableConfigsAreRefusedByName) {
  struct Case {
    const char* file;
    const char* key;
    const char* written;  // the config's line
    const char* edited;
  };
  const Case cases[] = {
      // 64 x 64 != 2 x 4,096
      {kCodestralMamba, "num_heads", "\"num_heads\": 128", "\"num_heads\": 64"},
      // vLLM builds the mixer with intermediate_size: the checkpoint would not load
      {kCodestralMamba, "intermediate_size", "\"intermediate_size\": 8192",
       "\"intermediate_size\": 4096"},
      {kCodestralMamba, "use_bias", "\"use_bias\": false", "\"use_bias\": true"},
      {kMamba130m, "time_step_rank", "\"time_step_rank\": 48", "\"time_step_rank\": \"half\""},
  };
  const vramplan_test::TempDir dir("mamba_pure");
  for (const Case& c : cases) {
    std::ifstream in(config_path(c.file));
    std::stringstream text;
    text << in.rdbuf();
    std::string config = text.str();
    const std::size_t at = config.find(c.written);
    ASSERT_NE(at, std::string::npos) << c.written;
    config.replace(at, std::string(c.written).size(), c.edited);
    const std::string path = (dir.path() / (std::string(c.key) + ".json")).string();
    std::ofstream(path) << config;
    try {
      (void)load_hf_config(path);
      ADD_FAILURE() << c.key << ": expected a refusal";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(c.key), std::string::npos) << e.what();
    }
  }
}

// vLLM 0.20+ (config/compilation.py, #38270): with FULL decode CUDA graphs a model with Mamba
// state refuses max_num_seqs above the KV pool's blocks, each decoding sequence holding one
// ("max_num_seqs (1024) exceeds available Mamba cache blocks (N)"; vllm#49064, #38632).
// Codestral-Mamba on one H100 at 0.20's defaults (no graph profiling yet; from 0.21 the minimal
// KV cache of 512 such blocks fails that first): a block is one sequence's state, 138,149,888 B,
// and the pool holds fewer than the default 1024 of them.
TEST(MambaStateBlocks, TheDefaultSequencesAboveThePoolAreRefusedFrom020) {
  const ModelSpec spec = load_hf_config(config_path(kCodestralMamba));
  HardwareConfig hardware;
  hardware.gpu = vramplan_test::h100();
  EngineConfig config;
  config.engine_version = "0.20.0";
  const Breakdown b = compute_breakdown(spec, hardware, config);
  EXPECT_EQ(b.outcome, Outcome::StateBlocksBelowMaxNumSeqs);
  EXPECT_EQ(b.config.max_num_seqs, 1024);
  EXPECT_EQ(b.num_blocks, b.ranks.at(0).kv_cache_bytes / 138149888);
  ASSERT_LT(b.num_blocks, 1024);
  // At the block count it starts; one more is refused.
  config.max_num_seqs = b.num_blocks;
  const Breakdown at_blocks = compute_breakdown(spec, hardware, config);
  EXPECT_EQ(at_blocks.outcome, Outcome::Started);
  config.max_num_seqs = at_blocks.num_blocks + 1;
  EXPECT_EQ(compute_breakdown(spec, hardware, config).outcome, Outcome::StateBlocksBelowMaxNumSeqs);
  // No graphs (--enforce-eager), or 0.19 (which capped the capture sizes): it starts.
  config.max_num_seqs.reset();
  config.enforce_eager = true;
  EXPECT_EQ(compute_breakdown(spec, hardware, config).outcome, Outcome::Started);
  config.enforce_eager = false;
  config.engine_version = "0.19.0";
  EXPECT_EQ(compute_breakdown(spec, hardware, config).outcome, Outcome::Started);
}

TEST(MambaStateBlocks, TheSolverLowersMaxNumSeqsToThePoolAndSaysWhy) {
  const ModelSpec spec = load_hf_config(config_path(kCodestralMamba));
  SolveRequest request;
  request.hardware.gpu = vramplan_test::h100();
  request.pinned.engine_version = "0.20.0";
  const Plan plan = solve(spec, request);
  ASSERT_TRUE(plan.fits) << plan.verdict;
  EXPECT_EQ(plan.breakdown.outcome, Outcome::Started);
  EXPECT_LE(plan.max_num_seqs, plan.breakdown.num_blocks);
  // The largest that starts: one more sequence than the blocks at that point is refused.
  EXPECT_GE(plan.max_num_seqs + 1, plan.breakdown.num_blocks);
  EXPECT_NE(plan.binding_max_num_seqs.find("state block"), std::string::npos)
      << plan.binding_max_num_seqs;
  EXPECT_FALSE(plan.as_written_fits);
  EXPECT_EQ(plan.as_written_outcome, Outcome::StateBlocksBelowMaxNumSeqs);
}

// vLLM's _get_and_verify_max_len returns a given --max-model-len as is when the config names no
// context key (mamba-130m-hf names none): 32,768 is served, not refused as beyond 2,048. The
// state per sequence does not grow with the context, so the pool holds as many sequences.
TEST(MambaContext, AGivenMaxModelLenBeyondTheAssumed2048IsServed) {
  const ModelSpec spec = load_hf_config(config_path(kMamba130m));
  EXPECT_TRUE(spec.max_position_embeddings_assumed);
  HardwareConfig hardware;
  hardware.gpu = vramplan_test::h100();
  EngineConfig config;
  config.engine_version = "0.33.0";
  config.max_model_len = 32768;
  const Breakdown b = compute_breakdown(spec, hardware, config);
  ASSERT_EQ(b.outcome, Outcome::Started);
  EXPECT_EQ(b.config.max_model_len, 32768);
  EXPECT_EQ(b.num_blocks, b.ranks.at(0).kv_cache_bytes / 1400832);
  SolveRequest request;
  request.hardware = hardware;
  request.pinned.engine_version = "0.33.0";
  request.target_context_tokens = 65536;
  const Plan plan = solve(spec, request);
  EXPECT_EQ(plan.max_model_len, 65536) << plan.verdict;
}

// A config with a context key keeps vLLM's refusal beyond it (FalconMamba-7B names none either,
// so the spec's own key is set here as a config that names one would set it).
TEST(MambaContext, AContextKeyStillBoundsMaxModelLen) {
  ModelSpec spec = load_hf_config(config_path(kMamba130m));
  spec.max_position_embeddings_assumed = false;
  HardwareConfig hardware;
  hardware.gpu = vramplan_test::h100();
  EngineConfig config;
  config.max_model_len = 4096;
  EXPECT_THROW(compute_breakdown(spec, hardware, config), ConfigError);
}

// TP splits the mixers as vLLM shards them: Mamba-1's in_proj over intermediate_size (1,536 for
// mamba-130m: TP 3 divides it, TP 5 does not); Mamba2's 128 heads and 8 groups (Codestral: TP 8
// splits both; TP 16 splits the heads but not the groups, which vLLM asserts).
TEST(MambaTensorParallel, TheMixerMustSplitEvenly) {
  const auto refused_field = [](const ModelSpec& spec, std::int32_t tp) -> std::string {
    HardwareConfig hardware;
    hardware.gpu = vramplan_test::h100();
    hardware.num_gpus = tp;
    EngineConfig config;
    config.tensor_parallel_size = tp;
    try {
      compute_breakdown(spec, hardware, config);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  const ModelSpec mamba1 = load_hf_config(config_path(kMamba130m));
  EXPECT_EQ(refused_field(mamba1, 3), "");
  EXPECT_NE(refused_field(mamba1, 5).find("mamba.intermediate_size (1536)"), std::string::npos);
  const ModelSpec mamba2 = load_hf_config(config_path(kCodestralMamba));
  EXPECT_EQ(refused_field(mamba2, 8), "");
  EXPECT_NE(refused_field(mamba2, 16).find("mamba.n_groups (or 1) (8)"), std::string::npos);
  EXPECT_NE(refused_field(mamba2, 3).find("mamba.num_heads (128)"), std::string::npos);
  EXPECT_FALSE(tensor_parallel_split_problem(mamba2, 8));
  ASSERT_TRUE(tensor_parallel_split_problem(mamba2, 16));
  EXPECT_EQ(tensor_parallel_split_problem(mamba2, 16)->field, "mamba.n_groups (or 1)");
}
