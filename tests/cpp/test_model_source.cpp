// Model paths read offline: a plain checkpoint folder and a Hugging Face cache entry whose
// snapshot files are symlinks into blobs/, with safetensors written by the test itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/model_source.hpp"

using namespace vramplan;
namespace fs = std::filesystem;

namespace {

// A tiny Llama: h 64, 2 layers, 4 heads / 2 KV heads of 16, I 128, vocab 100, bf16.
const char* kTinyConfig = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
  "vocab_size": 100, "max_position_embeddings": 256, "torch_dtype": "bfloat16"})";

struct Tensor {
  std::string name;
  std::int64_t rows;
  std::int64_t cols;
};

std::vector<Tensor> tiny_tensors() {
  std::vector<Tensor> t = {{"model.embed_tokens.weight", 100, 64},
                           {"lm_head.weight", 100, 64},
                           {"model.norm.weight", 64, 1}};
  for (int i = 0; i < 2; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (const Tensor& x : std::vector<Tensor>{{"self_attn.q_proj.weight", 64, 64},
                                               {"self_attn.k_proj.weight", 32, 64},
                                               {"self_attn.v_proj.weight", 32, 64},
                                               {"self_attn.o_proj.weight", 64, 64},
                                               {"mlp.gate_proj.weight", 128, 64},
                                               {"mlp.up_proj.weight", 128, 64},
                                               {"mlp.down_proj.weight", 64, 128},
                                               {"input_layernorm.weight", 64, 1},
                                               {"post_attention_layernorm.weight", 64, 1}}) {
      t.push_back({p + x.name, x.rows, x.cols});
    }
  }
  return t;
}

// Writes a bf16 safetensors file of `tensors`; returns the data bytes.
std::int64_t write_safetensors(const fs::path& file, const std::vector<Tensor>& tensors) {
  std::string header = "{";
  std::int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const std::int64_t bytes = t.rows * t.cols * 2;
    const std::string shape =
        t.cols == 1 ? "[" + std::to_string(t.rows) + "]"
                    : "[" + std::to_string(t.rows) + "," + std::to_string(t.cols) + "]";
    header += (offset == 0 ? "" : ",") +
              ("\"" + t.name + "\":{\"dtype\":\"BF16\",\"shape\":" + shape + ",\"data_offsets\":[" +
               std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}");
    offset += bytes;
  }
  header += "}";
  std::ofstream out(file, std::ios::binary);
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << std::string(static_cast<std::size_t>(offset), '\0');
  return offset;
}

class ModelSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("vramplan-model-source-" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

}  // namespace

TEST_F(ModelSourceTest, PlainFolderGivesExactCheckpointBytes) {
  const fs::path dir = root_ / "tiny";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << kTinyConfig;
  const std::int64_t written = write_safetensors(dir / "model.safetensors", tiny_tensors());
  const LoadedModel m = load_model_path(dir.string());
  EXPECT_EQ(m.kind, "safetensors");
  EXPECT_EQ(m.checkpoint_bytes, written);
  // Hand count: embed + head 2 x 6400, norm 64, per layer 4096 + 2 x 2048 + 4096 + 3 x 8192
  // + 128 = 36,992; parameters 12,864 + 2 x 36,992 = 86,848; x 2 B = 173,696 B.
  EXPECT_EQ(written, 173'696);
  EXPECT_EQ(m.spec_checkpoint_bytes, written);  // the config describes the files exactly
  EXPECT_EQ(m.spec.checkpoint_bytes, written);
  EXPECT_EQ(m.spec.id, dir.string());  // what `vllm serve` takes for a local folder
}

TEST_F(ModelSourceTest, HuggingFaceCacheEntryResolvesItsSnapshot) {
  const fs::path entry = root_ / "models--acme--tiny";
  const fs::path snapshot = entry / "snapshots" / "abc123";
  fs::create_directories(snapshot);
  fs::create_directories(entry / "blobs");
  fs::create_directories(entry / "refs");
  std::ofstream(entry / "refs" / "main") << "abc123\n";
  std::ofstream(entry / "blobs" / "cfg") << kTinyConfig;
  const std::int64_t written = write_safetensors(entry / "blobs" / "weights", tiny_tensors());
  fs::create_symlink("../../blobs/cfg", snapshot / "config.json");
  fs::create_symlink("../../blobs/weights", snapshot / "model.safetensors");
  const LoadedModel m = load_model_path(entry.string());
  EXPECT_EQ(m.checkpoint_bytes, written);
  EXPECT_EQ(m.spec.id, "acme/tiny");
  EXPECT_EQ(resolve_model_folder(entry.string()), snapshot.string());
  // A second snapshot with refs/main pointing nowhere is ambiguous: a named error.
  fs::create_directories(entry / "snapshots" / "def456");
  std::ofstream(entry / "refs" / "main", std::ios::trunc) << "../../etc\n";
  EXPECT_THROW(resolve_model_folder(entry.string()), ConfigError);
}

TEST_F(ModelSourceTest, FolderWithoutConfigIsANamedError) {
  write_safetensors(root_ / "model.safetensors", tiny_tensors());
  try {
    (void)load_model_path(root_.string());
    FAIL() << "accepted a folder without config.json";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_model_path((root_ / "missing").string()), ConfigError);
}

TEST(ModelSourceEmptyName, BlankPathIsANamedErrorNotTheCurrentFolder) {
  for (const std::string blank : {"", " ", "\t\n"}) {
    try {
      (void)load_model_path(blank);
      FAIL() << "accepted a blank model path";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
    }
  }
}
