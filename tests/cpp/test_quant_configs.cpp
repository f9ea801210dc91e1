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
  // Only some layers: the role stays quantized elsewhere, bf16 in the layers named.
  const ModelSpec one = qwen35_nvfp4({"model.language_model.layers.3.mlp.gate"});
  EXPECT_FALSE(has_role(one, "router"));
  EXPECT_EQ(one.quantization.unquantized_layers.at("router"), (std::vector<std::int32_t>{3}));
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

namespace {

// --- Per-layer skip lists: a module kept unquantized in some layers is stored in torch_dtype
// there (weight only: no scales, zeros, g_idx). Meta-Llama-3.1-8B shapes, n x k per module:
// q_proj and o_proj 4096 x 4096, k_proj and v_proj 1024 x 4096, gate_proj and up_proj
// 14336 x 4096, down_proj 4096 x 14336; bf16 is 2 bytes an element.

ModelSpec llama_with(const json& quantization_config) {
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  config["quantization_config"] = quantization_config;
  return vramplan::model_spec_from_hf_config(config, nullptr, "llama-8b-quant");
}

std::vector<std::int32_t> skipped_layers(const ModelSpec& spec, const std::string& role) {
  const auto& map = spec.quantization.unquantized_layers;
  const auto it = map.find(role);
  return it == map.end() ? std::vector<std::int32_t>{} : it->second;
}

json pack_quantized_w4a16(const json& ignore) {
  return {{"quant_method", "compressed-tensors"},
          {"format", "pack-quantized"},
          {"config_groups",
           {{"group_0",
             {{"targets", {"Linear"}},
              {"weights",
               {{"num_bits", 4},
                {"type", "int"},
                {"strategy", "group"},
                {"group_size", 128},
                {"symmetric", true}}}}}}},
          {"ignore", ignore}};
}

TEST(QuantConfigs, CompressedTensorsIgnoreOfOneLayersDownProjKeepsItInBf16) {
  const ModelSpec plain = llama_with(pack_quantized_w4a16({"lm_head"}));
  const ModelSpec skip =
      llama_with(pack_quantized_w4a16({"lm_head", "model.layers.3.mlp.down_proj"}));
  EXPECT_EQ(skipped_layers(skip, "mlp_down"), (std::vector<std::int32_t>{3}));
  EXPECT_TRUE(skipped_layers(skip, "mlp_gate_up").empty());
  // down_proj of layer 3: bf16 4096*14336*2 = 117,440,512 B, against W4A16 packed
  // 4096*14336/2 = 29,360,128 + bf16 scales (14336/128 = 112 groups) 112*4096*2 = 917,504 +
  // weight_shape int64[2] 16 = 30,277,648 B.
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(skip) - vramplan::checkpoint_tensor_bytes(plain),
            117'440'512 - 30'277'648);
  // On the GPU vLLM drops weight_shape: 117,440,512 - (29,360,128 + 917,504).
  const auto served = [](const ModelSpec& s) {
    return vramplan::weight_bytes_per_rank(s, s.quantization, s.torch_dtype, {}, false).mlp;
  };
  EXPECT_EQ(served(skip) - served(plain), 117'440'512 - 30'277'632);
}

TEST(QuantConfigs, RegexIgnoreMatchingSomeLayersOnly) {
  // FP8 per-channel (compressed-tensors: bf16 scales, one per output row, no input scale).
  const auto fp8 = [](const json& ignore) {
    return json{{"quant_method", "compressed-tensors"},
                {"config_groups",
                 {{"group_0",
                   {{"targets", {"Linear"}},
                    {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}}}}}}},
                {"ignore", ignore}};
  };
  const ModelSpec plain = llama_with(fp8({"lm_head"}));
  // re.match from the start: layers 0 and 1, not 10-19 ("layers\.1\." needs the dot).
  const ModelSpec skip = llama_with(fp8({"lm_head", R"(re:model\.layers\.[01]\.mlp\..*)"}));
  EXPECT_EQ(skipped_layers(skip, "mlp_gate_up"), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(skipped_layers(skip, "mlp_down"), (std::vector<std::int32_t>{0, 1}));
  // Per layer: gate and up 14336 x 4096 each, bf16 117,440,512 vs fp8 58,720,256 + 14336*2
  // = 58,748,928; down 4096 x 14336, bf16 117,440,512 vs 58,720,256 + 4096*2 = 58,728,448.
  const std::int64_t per_layer =
      2 * (117'440'512 - 58'748'928) + (117'440'512 - 58'728'448);  // 176,095,232
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(skip) - vramplan::checkpoint_tensor_bytes(plain),
            2 * per_layer);
  // A regex with no anchor beyond re.match's start matches inside every layer's name.
  EXPECT_EQ(llama_with(fp8({R"(re:.*mlp\.down_proj$)"})).quantization.unquantized_roles,
            (std::vector<std::string>{"mlp_down"}));
}

TEST(QuantConfigs, UnslothBitsandbytesSkipModulesPerLayer) {
  // Unsloth dynamic 4-bit: whole blocks of some layers kept in bf16. vLLM's
  // is_layer_skipped_bnb: an entry equal to a leading run of the name's dot-separated
  // components ("model.layers.0.self_attn") or to one component ("mlp").
  const auto bnb = [](const json& skip) {
    return json{{"quant_method", "bitsandbytes"},
                {"load_in_4bit", true},
                {"bnb_4bit_quant_type", "nf4"},
                {"bnb_4bit_use_double_quant", true},
                {"llm_int8_skip_modules", skip}};
  };
  const ModelSpec plain = llama_with(bnb({"lm_head"}));
  const ModelSpec skip =
      llama_with(bnb({"lm_head", "model.layers.0.self_attn", "model.layers.1.mlp"}));
  EXPECT_EQ(skipped_layers(skip, "attn_q"), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(skipped_layers(skip, "attn_kv"), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(skipped_layers(skip, "attn_o"), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(skipped_layers(skip, "mlp_gate_up"), (std::vector<std::int32_t>{1}));
  EXPECT_EQ(skipped_layers(skip, "mlp_down"), (std::vector<std::int32_t>{1}));
  // nf4 with double quant per module [n, k]: n*k/2 + n*k/64 uint8 absmax + 4*ceil(blocks/256)
  // nested absmax + 64 + 1024 (code tables).
  //   q, o (n*k 16,777,216):  8,388,608 + 262,144 + 4,096 + 1,088 = 8,655,936 vs 33,554,432 bf16
  //   k, v (n*k 4,194,304):   2,097,152 + 65,536 + 1,024 + 1,088 = 2,164,800 vs 8,388,608
  //   gate, up, down (58,720,256): 29,360,128 + 917,504 + 14,336 + 1,088 = 30,293,056
  //     vs 117,440,512
  const std::int64_t layer0 = 2 * (33'554'432 - 8'655'936) + 2 * (8'388'608 - 2'164'800);
  const std::int64_t layer1 = 3 * (117'440'512 - 30'293'056);
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(skip) - vramplan::checkpoint_tensor_bytes(plain),
            layer0 + layer1);  // 62,244,608 + 261,442,368
  // One component: every layer's MLP.
  const ModelSpec every_mlp = llama_with(bnb({"mlp"}));
  EXPECT_TRUE(has_role(every_mlp, "mlp_gate_up"));
  EXPECT_TRUE(has_role(every_mlp, "mlp_down"));
  EXPECT_FALSE(has_role(every_mlp, "attn_o"));
  // Not at a component boundary: names nothing vLLM builds (a substring match would take it).
  EXPECT_THROW(llama_with(bnb({"model.layers.1.ml"})), vramplan::SpecError);
}

TEST(QuantConfigs, AwqModulesToNotConvertPerLayerSubstrings) {
  const auto awq = [](const json& skip) {
    return json{{"quant_method", "awq"}, {"bits", 4},         {"group_size", 128},
                {"zero_point", true},    {"version", "gemm"}, {"modules_to_not_convert", skip}};
  };
  const ModelSpec plain = llama_with(awq(nullptr));
  const ModelSpec skip =
      llama_with(awq({"model.layers.0.self_attn", "model.layers.31.mlp.down_proj"}));
  EXPECT_EQ(skipped_layers(skip, "attn_q"), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(skipped_layers(skip, "mlp_down"), (std::vector<std::int32_t>{31}));
  // AWQ per module [n, k], G = k/128 groups: n*k/2 + G*n/2 (qzeros) + G*n*2 (fp16 scales).
  //   q, o: 8,388,608 + 65,536 + 262,144 = 8,716,288 vs 33,554,432
  //   k, v: 2,097,152 + 16,384 + 65,536 = 2,179,072 vs 8,388,608
  //   down: 29,360,128 + 229,376 + 917,504 = 30,507,008 vs 117,440,512
  const std::int64_t expected =
      2 * (33'554'432 - 8'716'288) + 2 * (8'388'608 - 2'179'072) + (117'440'512 - 30'507'008);
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(skip) - vramplan::checkpoint_tensor_bytes(plain),
            expected);  // 149,028,864
  // "layers.1." is a substring of layer 1's names only, not of layers 10-19.
  EXPECT_EQ(skipped_layers(llama_with(awq({"layers.1.mlp"})), "mlp_down"),
            (std::vector<std::int32_t>{1}));
}

TEST(QuantConfigs, GptqModelDynamicNegativeRuleForOneLayer) {
  const json gptq = {{"quant_method", "gptq"},
                     {"bits", 4},
                     {"group_size", 128},
                     {"desc_act", false},
                     {"sym", true},
                     {"dynamic", {{R"(-:model\.layers\.0\..*)", json::object()}}}};
  json without = gptq;
  without.erase("dynamic");
  const ModelSpec skip = llama_with(gptq);
  for (const char* role : {"attn_q", "attn_kv", "attn_o", "mlp_gate_up", "mlp_down"}) {
    EXPECT_EQ(skipped_layers(skip, role), (std::vector<std::int32_t>{0})) << role;
  }
  // GPTQ 4-bit per module [n, k], G = k/128: n*k/2 + G*n*2 (scales) + G*n/2 (qzeros) + 4k g_idx
  //   q, o:     8,388,608 + 262,144 + 65,536 + 16,384 = 8,732,672 vs 33,554,432
  //   k, v:     2,097,152 + 65,536 + 16,384 + 16,384 = 2,195,456 vs 8,388,608
  //   gate, up: 29,360,128 + 917,504 + 229,376 + 16,384 = 30,523,392 vs 117,440,512
  //   down:     29,360,128 + 917,504 + 229,376 + 57,344 = 30,564,352 vs 117,440,512
  const std::int64_t expected = 2 * (33'554'432 - 8'732'672) + 2 * (8'388'608 - 2'195'456) +
                                2 * (117'440'512 - 30'523'392) + (117'440'512 - 30'564'352);
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(skip) -
                vramplan::checkpoint_tensor_bytes(llama_with(without)),
            expected);  // 322,740,224
}

TEST(QuantConfigs, FusedShardsMustAgreeAsVllmRequires) {
  // vLLM fuses q/k/v into qkv_proj and gate/up into gate_up_proj and refuses a skip list that
  // keeps some shards of one at another precision ("All shards of fused layers ...").
  for (const char* entry : {"model.layers.2.self_attn.q_proj", "model.layers.2.self_attn.k_proj",
                            "model.layers.2.mlp.up_proj"}) {
    EXPECT_THROW(llama_with(pack_quantized_w4a16({entry})), vramplan::SpecError) << entry;
  }
  // Every shard, or vLLM's fused name itself (is_layer_skipped matches it first).
  const ModelSpec shards = llama_with(
      pack_quantized_w4a16({"model.layers.2.self_attn.q_proj", "model.layers.2.self_attn.k_proj",
                            "model.layers.2.self_attn.v_proj"}));
  const ModelSpec fused = llama_with(pack_quantized_w4a16({"model.layers.2.self_attn.qkv_proj"}));
  for (const ModelSpec* spec : {&shards, &fused}) {
    EXPECT_EQ(skipped_layers(*spec, "attn_q"), (std::vector<std::int32_t>{2}));
    EXPECT_EQ(skipped_layers(*spec, "attn_kv"), (std::vector<std::int32_t>{2}));
    EXPECT_TRUE(skipped_layers(*spec, "attn_o").empty());
  }
  // A layer past the last names nothing vLLM builds: a no-op, as in vLLM.
  EXPECT_TRUE(llama_with(pack_quantized_w4a16({"model.layers.32.mlp.down_proj"}))
                  .quantization.unquantized_layers.empty());
}

TEST(QuantConfigs, ModelOptMixedPrecisionLayerLeftOutIsBf16) {
  json layers = llama_mixed_layers("NVFP4");
  for (const char* m : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
    layers.erase(std::string("model.layers.0.") + m);
  }
  json config = read_config("meta-llama__Meta-Llama-3.1-8B.json");
  config["quantization_config"] = {{"quant_method", "modelopt"},
                                   {"quant_algo", "MIXED_PRECISION"},
                                   {"quantized_layers", layers}};
  const ModelSpec mixed = vramplan::model_spec_from_hf_config(config, nullptr, "mixed");
  config["quantization_config"]["quantized_layers"] = llama_mixed_layers("NVFP4");
  const ModelSpec all = vramplan::model_spec_from_hf_config(config, nullptr, "all");
  EXPECT_EQ(skipped_layers(mixed, "mlp_gate_up"), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(skipped_layers(mixed, "mlp_down"), (std::vector<std::int32_t>{0}));
  // NVFP4 per module: n*k/2 + (k/16)*n fp8 scales + 8 (two fp32 globals); gate, up and down
  // all hold 58,720,256 elements: 29,360,128 + 3,670,016 + 8 = 33,030,152 vs 117,440,512.
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(mixed) - vramplan::checkpoint_tensor_bytes(all),
            3 * (117'440'512 - 33'030'152));  // 253,231,080
}

TEST(QuantConfigs, GptqModulesToNotConvertIsRefusedAsVllmIgnoresIt) {
  const json gptq = {{"quant_method", "gptq"},
                     {"bits", 4},
                     {"group_size", 128},
                     {"modules_to_not_convert", {"model.layers.1.mlp"}}};
  try {
    (void)llama_with(gptq);
    FAIL() << "accepted";
  } catch (const vramplan::Error& e) {
    EXPECT_NE(std::string(e.what()).find("modules_to_not_convert"), std::string::npos);
  }
}

TEST(QuantConfigs, AutoRoundExtraConfigBits16KeepsModulesUnquantized) {
  // intel/auto-round writes per-module overrides in extra_config; vLLM's INCConfigParser takes
  // a key as the exact name (or a dotted suffix of it), or as re.search when it holds regex
  // characters, and {"bits": 16} leaves the module unquantized.
  const auto auto_round = [](const json& extra) {
    json config = {{"quant_method", "auto-round"},
                   {"packing_format", "auto_round:auto_gptq"},
                   {"bits", 4},
                   {"group_size", 128},
                   {"sym", true}};
    if (!extra.is_null()) config["extra_config"] = extra;
    return config;
  };
  const ModelSpec plain = llama_with(auto_round(nullptr));
  const ModelSpec skip = llama_with(
      auto_round({{"model.layers.0.mlp.down_proj", {{"bits", 16}, {"data_type", "float"}}},
                  {R"(.*layers\.1\..*)", {{"bits", 16}}},
                  {"model.layers.2.mlp.up_proj", {{"bits", 4}, {"group_size", 128}}}}));
  EXPECT_EQ(skipped_layers(skip, "mlp_down"), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(skipped_layers(skip, "mlp_gate_up"), (std::vector<std::int32_t>{1}));
  EXPECT_EQ(skipped_layers(skip, "attn_q"), (std::vector<std::int32_t>{1}));
  // GPTQ packing, 4-bit g128 (bytes as in GptqModelDynamicNegativeRuleForOneLayer): layer 0's
  // down_proj 117,440,512 - 30,564,352; all of layer 1 322,740,224.
  EXPECT_EQ(vramplan::checkpoint_tensor_bytes(skip) - vramplan::checkpoint_tensor_bytes(plain),
            (117'440'512 - 30'564'352) + 322'740'224);
  // Another bit width for one module is a second scheme: refused by name.
  try {
    (void)llama_with(auto_round({{"model.layers.2.mlp.down_proj", {{"bits", 8}}}}));
    FAIL() << "accepted";
  } catch (const vramplan::Error& e) {
    EXPECT_NE(std::string(e.what()).find("extra_config"), std::string::npos) << e.what();
  }
}

TEST(QuantConfigs, SkipPatternsLibstdcxxCannotParseSafelyAreRefused) {
  // fuzz_hf_import: libstdc++'s regex compiler multiplies a backreference number or a "{n}"
  // count into a long without a bound ("\\3333...3" overflowed, undefined behaviour).
  for (const char* rule : {R"(-:.*layers\.3\3333333333333333333333)", R"(-:.*a{123456})"}) {
    const json gptq = {{"quant_method", "gptq"},
                       {"bits", 4},
                       {"group_size", 128},
                       {"dynamic", {{rule, json::object()}}}};
    try {
      (void)llama_with(gptq);
      FAIL() << "accepted " << rule;
    } catch (const vramplan::Error& e) {
      EXPECT_NE(std::string(e.what()).find("backreferences"), std::string::npos) << e.what();
    }
  }
  // Ordinary escapes and short counts still work: "\\d", "{2}".
  EXPECT_EQ(skipped_layers(
                llama_with(
                    {{"quant_method", "gptq"},
                     {"bits", 4},
                     {"group_size", 128},
                     {"dynamic", {{R"(-:model\.layers\.\d{2}\.mlp\.down_proj)", json::object()}}}}),
                "mlp_down")
                .size(),
            22u);  // layers 10-31
}

}  // namespace
