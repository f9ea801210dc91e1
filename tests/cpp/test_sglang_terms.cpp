// SGLang's breakdown as terms (sglang_rank_terms): the launches test_sglang.cpp derives by hand,
// each term against the figure derived here and the field it comes from, in SGLang's order,
// adding up to the GPU's CUDA total; the JSON's rank shaped as a vLLM breakdown's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vramplan/sglang.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/weights.hpp"

namespace {

using namespace vramplan;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

const SpecDatabase& db() {
  static const SpecDatabase database = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return database;
}

const SglangRules& rules_0523() { return sglang_rules(sglang_table(), "0.5.23"); }

std::vector<std::string> names(const std::vector<Term>& terms) {
  std::vector<std::string> out;
  out.reserve(terms.size());
  for (const Term& t : terms) out.emplace_back(t.name);
  return out;
}

std::int64_t bytes_of(const std::vector<Term>& terms, const std::string& name) {
  for (const Term& t : terms) {
    if (t.name == name) return t.bytes;
  }
  ADD_FAILURE() << "no term " << name;
  return 0;
}

std::int64_t sum(const std::vector<Term>& terms) {
  std::int64_t total = 0;
  for (const Term& t : terms) total += t.bytes;
  return total;
}

// Llama-3.1-8B on 1x H100 (nvidia-smi 81 559 MiB), f = 0.90, 0.5.23, as
// SglangKvPool.DenseLlama8BOnH100 derives its pool. The 81 559 MiB tier (below 92 160) gives
// chunked_prefill_size 8192 and decode graphs up to bs 256 (TP < 4); R >= 2048, so all 256:
// 2 MiB x 256 = 512 MiB. Prefill graphs up to the 8192-token chunk: 4..32 step 4 (8),
// 48..256 step 16 (14), 288..512 step 32 (8), 576..1024 step 64 (8), 1280..4096 step 256
// (12), 4608..8192 step 512 (8) = 58 sizes x 8 MiB = 464 MiB. Activation of one 8192-token
// chunk: 8192 x (4 x 4096 hidden + 2 x 14 336 intermediate) x 2 B = 738 197 504.
TEST(SglangTerms, DenseLlama8BInSglangsOrderAddUpToTheGpu) {
  const ModelSpec& spec = db().model("meta-llama/Llama-3.1-8B");
  SglangConfig config;
  config.mem_fraction_static = 0.90;
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), config);
  ASSERT_EQ(b.verdict, SglangVerdict::Started);
  const std::vector<Term>& terms = b.terms;
  EXPECT_EQ(names(terms),
            (std::vector<std::string>{"cuda_context", "weights", "kv_pool", "req_to_token",
                                      "decode_cudagraph", "prefill_cudagraph", "activation",
                                      "free"}));  // TP = 1: no NCCL; dense: no state pool

  const std::int64_t total = 85030076416;
  const std::int64_t context = 311385129;
  const std::int64_t baseline = total - context;
  const std::int64_t weights =
      weight_bytes_per_rank(spec, spec.quantization, DType::BF16, RankPlacement{}).total();
  const std::int64_t slack = std::llround(static_cast<double>(baseline) * (1.0 - 0.90));
  const std::int64_t tokens = (baseline - weights - slack) / 131072;
  const std::int64_t requests = std::min<std::int64_t>(
      std::clamp<std::int64_t>(tokens * 512 / 131072, 2048, 4096), tokens / 2);
  const std::int64_t kv_pool = (tokens + 1) * 131072;  // K and V with the padding page
  const std::int64_t req_to_token = (requests + 1) * (131072 + 4) * 4;
  const std::int64_t decode = std::int64_t{256} * 2 * kMiB;
  const std::int64_t prefill = std::int64_t{58} * 8 * kMiB;
  const std::int64_t activation = std::int64_t{8192} * (4 * 4096 + 2 * 14336) * 2;
  EXPECT_EQ(bytes_of(terms, "cuda_context"), context);
  EXPECT_EQ(bytes_of(terms, "weights"), weights);
  EXPECT_EQ(bytes_of(terms, "kv_pool"), kv_pool);
  EXPECT_EQ(bytes_of(terms, "req_to_token"), req_to_token);
  EXPECT_EQ(bytes_of(terms, "decode_cudagraph"), decode);
  EXPECT_EQ(bytes_of(terms, "prefill_cudagraph"), prefill);
  EXPECT_EQ(bytes_of(terms, "activation"), activation);
  // The slack B x (1 - f), plus what the pool's whole tokens leave of the rest, less its
  // consumers.
  const std::int64_t free =
      slack + (baseline - weights - slack - kv_pool) - req_to_token - decode - prefill - activation;
  EXPECT_EQ(bytes_of(terms, "free"), free);
  EXPECT_GT(free, 0);
  EXPECT_EQ(sum(terms), total);

  // Each term is the field the breakdown reports.
  EXPECT_EQ(bytes_of(terms, "cuda_context"), b.cuda_context_bytes);
  EXPECT_EQ(bytes_of(terms, "weights"), b.weights_bytes);
  EXPECT_EQ(bytes_of(terms, "kv_pool"), b.kv_pool_bytes);
  EXPECT_EQ(bytes_of(terms, "req_to_token"), b.req_to_token_bytes);
  EXPECT_EQ(bytes_of(terms, "decode_cudagraph"), b.decode_graph_bytes);
  EXPECT_EQ(bytes_of(terms, "prefill_cudagraph"), b.prefill_graph_bytes);
  EXPECT_EQ(bytes_of(terms, "activation"), b.activation_bytes);
  EXPECT_EQ(bytes_of(terms, "free"), b.free_after_graphs_bytes - b.activation_bytes);
  EXPECT_EQ(sum(terms), b.gpu_total_bytes);

  for (const Term& t : terms) {
    const std::string provenance(t.provenance);
    const bool said =
        provenance.rfind("exact:", 0) == 0 || provenance.rfind("calibrated:", 0) == 0 ||
        provenance.rfind("estimate:", 0) == 0 || provenance.rfind("remainder:", 0) == 0;
    EXPECT_TRUE(said) << t.name << ": " << provenance;
  }
  EXPECT_EQ(std::string(terms[2].provenance).rfind("exact:", 0), 0U);     // the KV pool
  EXPECT_EQ(std::string(terms[4].provenance).rfind("estimate:", 0), 0U);  // decode graphs
}

// Mamba hybrid (SglangKvPool.MambaHybridNemotronNano): the state pool is its own term, after
// the KV pool, and the terms still add up to the GPU.
TEST(SglangTerms, MambaHybridHasItsStatePool) {
  SglangConfig config;
  config.mem_fraction_static = 0.88;
  const SglangBreakdown b = sglang_breakdown(db().model("nvidia/NVIDIA-Nemotron-Nano-9B-v2"),
                                             db().gpu("H100-80GB"), rules_0523(), config);
  ASSERT_EQ(b.verdict, SglangVerdict::Started);
  const std::vector<std::string> listed = names(b.terms);
  ASSERT_GE(listed.size(), 5U);
  EXPECT_EQ(listed[2], "kv_pool");
  EXPECT_EQ(listed[3], "mamba_pool");
  EXPECT_EQ(bytes_of(b.terms, "mamba_pool"), (b.mamba_slots + 1) * b.mamba_state_bytes_per_slot);
  EXPECT_EQ(sum(b.terms), 85030076416);
}

// DeepSeek-V3 at TP = 8 on H200 (SglangKvPool.MlaDeepSeekV3): NCCL over NVLink is a term of
// its own, 1 224 065 679 B (sglang.yaml, record sgl-r03); B = total - context - NCCL.
TEST(SglangTerms, TensorParallelRanksListNccl) {
  SglangConfig config;
  config.tp_size = 8;
  config.mem_fraction_static = 0.90;
  const SglangBreakdown b = sglang_breakdown(db().model("deepseek-ai/DeepSeek-V3"),
                                             db().gpu("H200"), rules_0523(), config);
  ASSERT_EQ(names(b.terms)[1], "nccl");
  EXPECT_EQ(bytes_of(b.terms, "nccl"), 1224065679);
  EXPECT_EQ(bytes_of(b.terms, "cuda_context") + bytes_of(b.terms, "nccl") + b.baseline_free_bytes,
            150022914048);
  EXPECT_EQ(sum(b.terms), 150022914048);
}

// Llama-3.1-70B in bf16 on one H100 (SglangVerdict.WeightsLeaveNoMemoryIn0523Words): no pool
// is sized, so the weights overrun the baseline and `free` is negative by as much.
TEST(SglangTerms, WeightsThatDoNotFitLeaveANegativeRemainder) {
  const ModelSpec& spec = db().model("meta-llama/Llama-3.1-70B");
  const SglangBreakdown b =
      sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), SglangConfig{});
  ASSERT_EQ(b.verdict, SglangVerdict::WeightsLeaveNoMemory);
  EXPECT_EQ(bytes_of(b.terms, "kv_pool"), 0);
  EXPECT_EQ(bytes_of(b.terms, "req_to_token"), 0);
  const std::int64_t weights =
      weight_bytes_per_rank(spec, spec.quantization, DType::BF16, RankPlacement{}).total();
  EXPECT_EQ(bytes_of(b.terms, "free"), 85030076416 - 311385129 - weights);
  EXPECT_LT(bytes_of(b.terms, "free"), 0);
  EXPECT_EQ(sum(b.terms), 85030076416);
}

// The JSON's rank is a vLLM breakdown rank's shape: its pipeline stage, the GPU total, the
// budget line at the weights and pools' share (total - slack) and the terms in order.
// Qwen2.5-7B's 28 layers over PP = 3 are 9, 10, 9 (pipeline_layer_range): stage 1's cell is
// 10/9 of the others' and its weights lack the ~1 GiB embedding, which is less than a tenth of
// the ~76 GiB f x B, so its pool is the smallest and it is the rank reported.
TEST(SglangTerms, JsonRankIsTheReportedStage) {
  const ModelSpec& spec = db().model("Qwen/Qwen2.5-7B-Instruct");
  ASSERT_EQ(spec.num_hidden_layers, 28);
  SglangConfig config;
  config.mem_fraction_static = 0.9;
  config.context_length = 8192;
  config.pp_size = 3;
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), config);
  ASSERT_EQ(b.verdict, SglangVerdict::Started);
  EXPECT_EQ(b.pipeline_rank, 1);
  RankPlacement placement;
  placement.pipeline_parallel_size = 3;
  placement.pipeline_rank = 1;
  EXPECT_EQ(b.weights_bytes,
            weight_bytes_per_rank(spec, spec.quantization, DType::BF16, placement).total());
  const nlohmann::json j = to_json(b);
  ASSERT_EQ(j["ranks"].size(), 1U);
  const nlohmann::json& rank = j["ranks"][0];
  EXPECT_EQ(rank["pipeline_rank"], b.pipeline_rank);
  EXPECT_EQ(rank["total_memory_bytes"], 85030076416);
  EXPECT_EQ(rank["requested_memory_bytes"].get<std::int64_t>(), 85030076416 - b.slack_bytes);
  ASSERT_EQ(rank["terms"].size(), b.terms.size());
  for (std::size_t i = 0; i < b.terms.size(); ++i) {
    EXPECT_EQ(rank["terms"][i]["name"], std::string(b.terms[i].name));
    EXPECT_EQ(rank["terms"][i]["bytes"], b.terms[i].bytes);
    EXPECT_EQ(rank["terms"][i]["provenance"], std::string(b.terms[i].provenance));
  }
  EXPECT_EQ(j["weights_bytes"], b.weights_bytes);  // the flat fields stay
}

}  // namespace
