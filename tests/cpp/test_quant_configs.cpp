// Quantization configs as checkpoints write them: skip lists matched against the module names
// vLLM builds (compressed-tensors `ignore` with names and "re:" regexes, AWQ substrings, ModelOpt
// globs, GPTQ `dynamic` "-:" rules), ModelOpt MIXED_PRECISION, several compressed-tensors
// groups, and group sizes. Expected bytes are derived by hand in each test from the shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/weights.hpp"

namespace {

using nlohmann::json;
using vramplan::ModelSpec;

json read_config(const std::string& name) {
  std::ifstream in(std::filesystem::path(VRAMPLAN_TEST_DATA_DIR) / "configs" / name);
  return json::parse(in);
}

bool has_role(const ModelSpec& spec, const std::string& role) {
  const auto& roles = spec.quantization.unquantized_roles;
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

// NVFP4 as llm-compressor writes it (nvfp4-pack-quantized): one group over every Linear.
json nvfp4_config(const json& ignore) {
  return {
      {"quant_method", "compressed-tensors"},
      {"format", "nvfp4-pack-quantized"},
      {"config_groups",
       {{"group_0",
         {{"targets", {"Linear"}},
          {"weights",
           {{"num_bits", 4}, {"type", "float"}, {"strategy", "tensor_group"}, {"group_size", 16}}},
          {"input_activations",
           {{"num_bits", 4},
            {"type", "float"},
            {"strategy", "tensor_group"},
            {"group_size", 16},
            {"dynamic", "local"}}}}}}},
      {"ignore", ignore}};
}

// Qwen3.5-35B-A3B (tests/data/configs): 40 layers, 30 of them Gated DeltaNet with
// linear_num_value_heads 32 and hidden 2048, an MTP layer, a vision tower.
ModelSpec qwen35_nvfp4(const json& ignore) {
  json config = read_config("Qwen__Qwen3.5-35B-A3B.json");
  config["quantization_config"] = nvfp4_config(ignore);
  return vramplan::model_spec_from_hf_config(config, nullptr, "qwen35-nvfp4");
}

TEST(QuantConfigs, RegexIgnoreOfInProjAAndBKeepsThoseGatesInBf16) {
  const json base = {"lm_head", "re:.*mlp.gate$", "re:.*shared_expert_gate$", "re:.*visual.*"};
  json with_gates = base;
  with_gates.push_back("re:.*linear_attn.in_proj_a$");
  with_gates.push_back("re:.*linear_attn.in_proj_b$");
  const ModelSpec quantized = qwen35_nvfp4(base);
  const ModelSpec kept = qwen35_nvfp4(with_gates);
  EXPECT_TRUE(has_role(kept, "mixer_in_ba"));
  EXPECT_FALSE(has_role(quantized, "mixer_in_ba"));
  EXPECT_TRUE(has_role(kept, "router"));
  EXPECT_TRUE(has_role(kept, "lm_head"));
  // in_proj_b and in_proj_a are [32, 2048] each, stored apart, in each of the 30
  // linear-attention layers (vLLM fuses them into in_proj_ba [64, 2048]).
  //   bf16:  64 x 2048 x 2                                   = 262,144 B
  //   NVFP4: 2 x (32 x 2048 / 2 + (2048 / 16) x 32 + 4 + 4)  =  73,744 B (e2m1 pairs, fp8
  //          scales, a float32 weight_scale_2 and input_scale per module)
  const std::int64_t per_layer = 262'144 - 73'744;
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(kept, false) -
                vramplan::checkpoint_tensor_bytes(quantized, false),
            30 * per_layer);
}

TEST(QuantConfigs, InProjAAloneIsPartOfAFusedLayerAndRefused) {
  // vLLM fuses in_proj_b and in_proj_a into in_proj_ba and refuses mixed shards.
  EXPECT_THROW(qwen35_nvfp4({"re:.*linear_attn.in_proj_a$"}), vramplan::SpecError);
}

TEST(QuantConfigs, MtpRegexKeepsOnlyTheMtpLayerUnquantized) {
  const ModelSpec plain = qwen35_nvfp4({"lm_head"});
  const ModelSpec mtp_kept = qwen35_nvfp4({"lm_head", "re:.*mtp.*"});
  EXPECT_TRUE(has_role(mtp_kept, "mtp"));
  // The decoder is untouched; the MTP layer (one full-attention MoE layer) is stored in bf16,
  // so the checkpoint with MTP grows: every quantized Linear there goes from ~0.5625 B to 2 B.
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(mtp_kept, false),
            vramplan::checkpoint_tensor_bytes(plain, false));
  const std::int64_t growth = vramplan::checkpoint_tensor_bytes(mtp_kept, true) -
                              vramplan::checkpoint_tensor_bytes(plain, true);
  // eh_proj alone [2048, 4096]: bf16 16,777,216 B vs NVFP4 4,194,304 + 524,288 + 8 B.
  EXPECT_GT(growth, 16'777'216 - (4'194'304 + 524'288 + 8));
}

TEST(QuantConfigs, ExactIgnoreNamesForEveryLayerBecomeARole) {
  // llm-compressor lists each layer's router by name: all 40 layers -> the router role.
  json ignore = {"lm_head"};
  for (int layer = 0; layer < 40; ++layer) {
    ignore.push_back("model.language_model.layers." + std::to_string(layer) + ".mlp.gate");
  }
  EXPECT_TRUE(has_role(qwen35_nvfp4(ignore), "router"));
  // Only some layers: part of a role, which vramplan cannot express.
  EXPECT_THROW(qwen35_nvfp4({"model.language_model.layers.3.mlp.gate"}), vramplan::SpecError);
}

TEST(QuantConfigs, GroupSizeMustBeAnIntegerThatTilesTheInput) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  config["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128.0}};
  EXPECT_EQ(vramplan::model_spec_from_hf_config(config, nullptr, "g").quantization.group_size, 128);
  for (const json& bad : {json(1.99), json(3), json(0), json(-2), json("128")}) {
    config["quantization_config"]["group_size"] = bad;
    try {
      (void)vramplan::model_spec_from_hf_config(config, nullptr, "g");
      FAIL() << "accepted group_size " << bad.dump();
    } catch (const vramplan::Error& e) {
      EXPECT_NE(std::string(e.what()).find("group_size"), std::string::npos) << e.what();
    }
  }
  config["quantization_config"]["group_size"] = -1;  // one group over the whole input
  EXPECT_EQ(vramplan::model_spec_from_hf_config(config, nullptr, "g").quantization.group_size, -1);
}

TEST(QuantConfigs, GptqDynamicSkipRulesAndEqualOverrides) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  config["quantization_config"] = {
      {"quant_method", "gptq"},
      {"bits", 4},
      {"group_size", 128},
      {"dynamic", {{"-:.*mlp\\.down_proj", json::object()}, {"+:.*self_attn.*", {{"bits", 4}}}}}};
  const ModelSpec spec = vramplan::model_spec_from_hf_config(config, nullptr, "d");
  EXPECT_TRUE(has_role(spec, "mlp_down"));
  EXPECT_FALSE(has_role(spec, "attn_q"));
}

TEST(QuantConfigs, AwqModulesToNotConvertMatchAsSubstrings) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  config["quantization_config"] = {
      {"quant_method", "awq"}, {"bits", 4},
      {"group_size", 128},     {"zero_point", true},
      {"version", "gemm"},     {"modules_to_not_convert", {"down_proj", "visual", "mtp"}}};
  const ModelSpec spec = vramplan::model_spec_from_hf_config(config, nullptr, "awq");
  EXPECT_TRUE(has_role(spec, "mlp_down"));
  EXPECT_FALSE(has_role(spec, "mlp_gate_up"));
}

TEST(QuantConfigs, ModelOptMixedPrecisionWithOneAlgorithmLeavesUnlistedRolesUnquantized) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  json layers = json::object();
  for (int layer = 0; layer < 32; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    for (const char* m : {"gate_proj", "up_proj", "down_proj"})
      layers[p + m] = {{"quant_algo", "NVFP4"}, {"group_size", 16}};
  }
  config["quantization_config"] = {{"quant_method", "modelopt"},
                                   {"quant_algo", "MIXED_PRECISION"},
                                   {"quantized_layers", layers}};
  const ModelSpec spec = vramplan::model_spec_from_hf_config(config, nullptr, "mixed");
  EXPECT_EQ(spec.quantization.method, vramplan::QuantMethod::Nvfp4);
  for (const char* role : {"attn_q", "attn_kv", "attn_o", "lm_head"}) {
    EXPECT_TRUE(has_role(spec, role)) << role;
  }
  EXPECT_FALSE(has_role(spec, "mlp_gate_up"));
  EXPECT_FALSE(has_role(spec, "mlp_down"));
}

// NVIDIA's mixed checkpoints: FP8 attention beside NVFP4 MLP, per layer in quantized_layers.
json llama_mixed_layers(const char* attention_algo) {
  json layers = json::object();
  for (int layer = 0; layer < 32; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    for (const char* m :
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}) {
      layers[p + m] = {{"quant_algo", attention_algo}};
    }
    for (const char* m : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
      layers[p + m] = {{"quant_algo", "NVFP4"}, {"group_size", 16}};
    }
  }
  return layers;
}

TEST(QuantConfigs, ModelOptMixedPrecisionFp8AttentionBesideNvfp4Mlp) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  config["quantization_config"] = {{"quant_method", "modelopt"},
                                   {"quant_algo", "MIXED_PRECISION"},
                                   {"quantized_layers", llama_mixed_layers("FP8")}};
  const ModelSpec mixed = vramplan::model_spec_from_hf_config(config, nullptr, "mixed");
  config["quantization_config"]["quantized_layers"] = llama_mixed_layers("NVFP4");
  const ModelSpec all_nvfp4 = vramplan::model_spec_from_hf_config(config, nullptr, "nvfp4");
  EXPECT_EQ(mixed.quantization.method, vramplan::QuantMethod::Nvfp4);
  EXPECT_EQ(mixed.quantization.fp8_roles,
            (std::vector<std::string>{"attn_q", "attn_kv", "attn_o"}));
  EXPECT_TRUE(all_nvfp4.quantization.fp8_roles.empty());
  // Llama-3.1-8B attention per layer, n x k: q 4096 x 4096, k+v 2048 x 4096, o 4096 x 4096.
  //   FP8 (ModelOpt):  n*k + 4 (weight_scale) + 4 (input_scale)
  //   NVFP4:           n*k/2 + (k/16)*n + 8
  //   q, o: 16,777,224 - 9,437,192 = 7,340,032 each; k+v: 8,388,616 - 4,718,600 = 3,670,016
  const std::int64_t per_layer = 2 * 7'340'032 + 3'670'016;
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(mixed) - vramplan::checkpoint_tensor_bytes(all_nvfp4),
            32 * per_layer);
}

TEST(QuantConfigs, ModelOptExcludeModulesAreGlobs) {
  json config = read_config("Qwen__Qwen3-30B-A3B.json");
  const json quant = {{"producer", {{"name", "modelopt"}}},
                      {"quantization",
                       {{"quant_algo", "NVFP4"},
                        {"group_size", 16},
                        {"exclude_modules", {"lm_head", "model.layers.*.mlp.gate"}}}}};
  const ModelSpec spec = vramplan::model_spec_from_hf_config(config, &quant, "mo");
  EXPECT_TRUE(has_role(spec, "router"));
  EXPECT_TRUE(has_role(spec, "lm_head"));
}

TEST(QuantConfigs, SeveralCompressedTensorsGroupsWithOneSchemeAreAccepted) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  const json weights = {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}};
  config["quantization_config"] = {
      {"quant_method", "compressed-tensors"},
      {"config_groups",
       {{"group_0", {{"targets", {"re:.*self_attn.*"}}, {"weights", weights}}},
        {"group_1", {{"targets", {"re:.*mlp.*"}}, {"weights", weights}}}}},
      {"ignore", {"lm_head"}}};
  const ModelSpec spec = vramplan::model_spec_from_hf_config(config, nullptr, "two");
  EXPECT_EQ(spec.quantization.method, vramplan::QuantMethod::Fp8);
  EXPECT_TRUE(has_role(spec, "lm_head"));
}

TEST(QuantConfigs, CompressedTensorsFp8ScalesAreStoredInTheModelDtype) {
  // FP8-dynamic as llm-compressor writes it: compressed-tensors (initialize_qparams) makes
  // weight_scale [n, 1] in the observed weight's dtype, bf16 here, 2 bytes a scale where vLLM's
  // own fp8 format stores fp32; dynamic per-token activations store no input_scale.
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  const json weights = {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}};
  const json inputs = {
      {"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}};
  config["quantization_config"] = {
      {"quant_method", "compressed-tensors"},
      {"config_groups",
       {{"group_0",
         {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", inputs}}}}},
      {"ignore", {"lm_head"}}};
  const ModelSpec spec = vramplan::model_spec_from_hf_config(config, nullptr, "fp8-dynamic");
  EXPECT_TRUE(spec.quantization.scales_in_torch_dtype);
  // Llama-3.1-8B, per layer: Linear weights 218,103,808 fp8 bytes; output rows q 4096 + k, v
  // 1024 each + o 4096 + gate, up 14336 each + down 4096 = 43,008 bf16 scales. Embedding and
  // lm_head 128256 x 4096 bf16, norms 65 x 4096 bf16.
  const std::int64_t per_layer = 218103808LL + 2 * 43008;
  const std::int64_t expected = 32 * per_layer + 2LL * 2 * 128256 * 4096 + 2LL * 65 * 4096;
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(spec), expected);
  // vLLM loads the scales into float32 parameters: the GPU holds 4 bytes a scale.
  const vramplan::WeightBytes gpu = vramplan::weight_bytes_per_rank(
      spec, spec.quantization, vramplan::DType::BF16, vramplan::RankPlacement{});
  EXPECT_EQ(gpu.attention + gpu.mlp, 32 * (218103808LL + 4 * 43008));
}

// The hf_import fuzz seeds for the quantization parsers (tests/fuzz/corpus/hf_import) are valid
// configs: each must import, so the fuzzer starts from inputs that reach the new code.
TEST(QuantConfigs, FuzzSeedsForTheQuantizationParsersImport) {
  const auto dir = std::filesystem::path(VRAMPLAN_SOURCE_DIR) / "tests/fuzz/corpus/hf_import";
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    EXPECT_NO_THROW((void)vramplan::load_hf_config(entry.path().string()));
    ++seeds;
  }
  EXPECT_GE(seeds, 5);
}

}  // namespace
