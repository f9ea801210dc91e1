#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/spec_db.hpp"

namespace vramplan_test {

constexpr double kGiB = 1073741824.0;

// The shipped model_specs/ database, loaded once per test binary.
inline const vramplan::SpecDatabase& shipped_database() {
  static const vramplan::SpecDatabase db =
      vramplan::SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

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

// A fresh directory under the GoogleTest temp dir, named after the test, removed at its end.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string leaf = "vramplan_" + prefix + "_" + info->test_suite_name() + "_" + info->name();
    for (auto& c : leaf) {
      if (c == '/') c = '_';
    }
    path_ = std::filesystem::path(::testing::TempDir()) / leaf;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A config.json kept in tests/data/configs (provenance in its SOURCES.md).
inline std::string config_path(const std::string& name) {
  return std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/" + name;
}

inline nlohmann::json config_json(const std::string& name) {
  std::ifstream in(config_path(name));
  return nlohmann::json::parse(in);
}

// KV cache options at bf16 (KV and recurrent state), per rank at `tp`.
inline vramplan::KvCacheOptions bf16_kv_options(std::int32_t tp = 1) {
  vramplan::KvCacheOptions o;
  o.tensor_parallel_size = tp;
  o.kv_element_bytes = 2;
  o.state_element_bytes = 2;
  return o;
}

// A published parameter count is the hand count rounded to its significant figures: within
// half a unit of its last digit (2.92e9 with three figures: within 5e6).
inline void expect_published(std::int64_t hand, double published, int figures = 3) {
  const double unit = std::pow(10.0, std::floor(std::log10(published)) - (figures - 1));
  EXPECT_LE(std::fabs(static_cast<double>(hand) - published), unit / 2)
      << "hand " << hand << " vs published " << published;
}

// A linear layer's weight [out, in] and its bias [out].
inline std::int64_t linear(std::int64_t in, std::int64_t out, bool bias) {
  return in * out + (bias ? out : 0);
}

// A Qwen3 decoder's parameters by hand, head size 128: unbiased q/k/v/o with q/k RMSNorms over
// the head, SwiGLU MLP, two RMSNorms a layer, a final norm, the head tied to the embeddings.
inline std::int64_t qwen3_tied_text(std::int64_t h, std::int64_t layers, std::int64_t heads,
                                    std::int64_t kv_heads, std::int64_t inter, std::int64_t vocab) {
  constexpr std::int64_t kHead = 128;
  const std::int64_t layer = linear(h, heads * kHead, false) +
                             2 * linear(h, kv_heads * kHead, false) +
                             linear(heads * kHead, h, false) + 2 * kHead + 3 * h * inter + 2 * h;
  return layers * layer + h + vocab * h;
}

// KV bytes per token of `spec` at bf16 (KV and recurrent state), per rank at `tp`.
inline std::int64_t kv_bf16(const vramplan::ModelSpec& spec, std::int32_t tp = 1) {
  return vramplan::kv_bytes_per_token(spec, bf16_kv_options(tp));
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

// A shipped model on a shipped GPU at one engine release: what the release tests change one
// knob of and break down.
struct ReleaseLaunch {
  std::shared_ptr<const vramplan::ModelSpec> spec;
  vramplan::HardwareConfig hardware;
  vramplan::EngineConfig config;
};

inline ReleaseLaunch release_launch(const char* model, const char* gpu, const char* version) {
  ReleaseLaunch l;
  l.spec = std::make_shared<const vramplan::ModelSpec>(shipped_database().model(model));
  l.hardware.gpu = shipped_database().gpu(gpu);
  l.config.engine_version = version;
  return l;
}

inline vramplan::Breakdown breakdown_of(const ReleaseLaunch& l) {
  return vramplan::compute_breakdown(*l.spec, l.hardware, l.config);
}

// The ConfigError `fn` throws (a test failure, and an empty error, when it throws none).
inline vramplan::ConfigError config_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const vramplan::ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError";
  return vramplan::ConfigError("", "", "", "");
}

// The SpecError `fn` throws (file, field path and value named), the same way.
inline vramplan::SpecError spec_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const vramplan::SpecError& e) {
    return e;
  }
  ADD_FAILURE() << "no SpecError";
  return vramplan::SpecError("", "", "", "");
}

}  // namespace vramplan_test
