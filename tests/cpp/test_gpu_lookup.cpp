// The one GPU lookup (SpecDatabase::gpu): database ids, the names nvidia-smi and rocm-smi print,
// lspci lines, shared names that warn, and the derived-total rule against measured pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

namespace {

const vramplan::SpecDatabase& db() {
  static const vramplan::SpecDatabase loaded =
      vramplan::SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return loaded;
}

struct NameCase {
  const char* printed;  // as the tool prints it
  const char* tool;     // which tool prints it that way
  const char* id;       // the database GPU it must resolve to
};

// Names copied from the tools' output formats: nvidia-smi --query-gpu=name (NVML's product
// name), rocm-smi --showproductname "Card series", lspci's "vendor device [name] (rev)".
const NameCase kNames[] = {
    {"NVIDIA H100 80GB HBM3", "nvidia-smi", "H100-80GB"},
    {"NVIDIA H100 PCIe", "nvidia-smi", "H100-PCIe"},
    {"NVIDIA H100 NVL", "nvidia-smi", "H100-NVL"},
    {"NVIDIA H200", "nvidia-smi", "H200"},
    {"NVIDIA H200 NVL", "nvidia-smi", "H200-NVL"},
    {"NVIDIA H20", "nvidia-smi", "H20"},
    {"NVIDIA H800", "nvidia-smi", "H800"},
    {"NVIDIA A100-SXM4-80GB", "nvidia-smi", "A100-80GB"},
    {"NVIDIA A100 80GB PCIe", "nvidia-smi", "A100-80GB"},
    {"NVIDIA A100-SXM4-40GB", "nvidia-smi", "A100-40GB"},
    {"NVIDIA A100-PCIE-40GB", "nvidia-smi", "A100-40GB"},
    {"NVIDIA A800-SXM4-80GB", "nvidia-smi", "A800-80GB"},
    {"NVIDIA B200", "nvidia-smi", "B200"},
    {"NVIDIA B300 SXM6 AC", "nvidia-smi", "B300"},
    {"NVIDIA GB200", "nvidia-smi", "GB200"},
    {"NVIDIA GB10", "nvidia-smi", "GB10"},
    {"NVIDIA GH200 480GB", "nvidia-smi", "GH200-96GB"},
    {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "nvidia-smi", "RTX-PRO-6000"},
    {"NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "nvidia-smi", "RTX-PRO-6000"},
    {"NVIDIA RTX 6000 Ada Generation", "nvidia-smi", "RTX-6000-Ada"},
    {"NVIDIA RTX A6000", "nvidia-smi", "RTX-A6000"},
    {"NVIDIA RTX A5000", "nvidia-smi", "RTX-A5000"},
    {"NVIDIA L40S", "nvidia-smi", "L40S"},
    {"NVIDIA L20", "nvidia-smi", "L20"},
    {"NVIDIA A10G", "nvidia-smi", "A10G"},
    {"NVIDIA GeForce RTX 5090", "nvidia-smi", "RTX-5090"},
    {"NVIDIA GeForce RTX 5090 D", "nvidia-smi", "RTX-5090-D"},
    {"NVIDIA GeForce RTX 5080", "nvidia-smi", "RTX-5080"},
    {"NVIDIA GeForce RTX 5070 Ti", "nvidia-smi", "RTX-5070-Ti"},
    {"NVIDIA GeForce RTX 4090", "nvidia-smi", "RTX-4090"},
    {"NVIDIA GeForce RTX 4090 D", "nvidia-smi", "RTX-4090-D"},
    {"NVIDIA GeForce RTX 4080 SUPER", "nvidia-smi", "RTX-4080-SUPER"},
    {"NVIDIA GeForce RTX 3090", "nvidia-smi", "RTX-3090"},
    {"NVIDIA GeForce RTX 3060", "nvidia-smi", "RTX-3060-12GB"},
    {"Tesla T4", "nvidia-smi", "T4"},
    {"Tesla V100-SXM2-32GB", "nvidia-smi", "V100-32GB"},
    {"AMD Instinct MI300X", "rocm-smi", "MI300X"},
    {"AMD Instinct MI325X", "rocm-smi", "MI325X"},
    {"AMD Instinct MI355X", "rocm-smi", "MI355X"},
    {"AMD Instinct MI300A", "rocm-smi", "MI300A"},
    {"AMD Instinct MI250X/MI250", "rocm-smi", "MI250X"},
    {"AMD Radeon RX 7900 XTX", "rocm-smi", "RX-7900-XTX"},
    {"AMD Radeon PRO W7900", "rocm-smi", "Radeon-PRO-W7900"},
    {"NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)", "lspci", "H100-80GB"},
    {"NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)", "lspci", "A100-80GB"},
    {"NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1)", "lspci", "RTX-4090"},
    {"NVIDIA Corporation AD102GL [L40S] (rev a1)", "lspci", "L40S"},
    {"NVIDIA Corporation TU104GL [Tesla T4] (rev a1)", "lspci", "T4"},
    {"Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X]", "lspci", "MI300X"},
    // What users type: ids in other cases and spacings.
    {"h100-80gb", "user", "H100-80GB"},
    {"rtx 4090 d", "user", "RTX-4090-D"},
    {"RTX_PRO_6000", "user", "RTX-PRO-6000"},
};

TEST(GpuLookup, EveryPrintedNameFormResolvesToItsGpu) {
  for (const auto& c : kNames) {
    SCOPED_TRACE(std::string(c.tool) + ": " + c.printed);
    ASSERT_TRUE(db().has_gpu(c.printed));
    EXPECT_EQ(db().gpu(c.printed).id, c.id);
    EXPECT_EQ(db().gpu_name_note(c.printed), "");  // exact names never warn
    EXPECT_EQ(db().gpu_candidates(c.printed).size(), 1U);
  }
}

TEST(GpuLookup, SharedNameAssumesOneSizeAndSaysWhich) {
  // "NVIDIA A100" is printed for neither card but written by users for both (40 and 80 GB).
  EXPECT_EQ(db().gpu("NVIDIA A100").id, "A100-80GB");
  const std::string note = db().gpu_name_note("NVIDIA A100");
  EXPECT_NE(note.find("assumed A100-80GB"), std::string::npos) << note;
  EXPECT_NE(note.find("A100-40GB"), std::string::npos) << note;
  const auto candidates = db().gpu_candidates("a100");
  ASSERT_EQ(candidates.size(), 2U);
  EXPECT_EQ(candidates[0].id, "A100-80GB");
  EXPECT_EQ(candidates[1].id, "A100-40GB");
  EXPECT_EQ(db().gpu_candidates("V100").size(), 2U);
  EXPECT_EQ(db().gpu_candidates("NVIDIA GH200").size(), 2U);
}

TEST(GpuLookup, UnknownNameIsAConfigErrorNamingTheValue) {
  try {
    (void)db().gpu("NVIDIA GeForce RTX 9999");
    FAIL() << "expected ConfigError";
  } catch (const vramplan::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("NVIDIA GeForce RTX 9999"), std::string::npos);
  }
  EXPECT_TRUE(db().gpu_candidates("NVIDIA GeForce RTX 9999").empty());
  EXPECT_FALSE(db().has_gpu(""));
}

TEST(GpuLookup, DatabaseHasAtLeast45GpusEachWithASourceAndUnifiedPartsSaySo) {
  EXPECT_GE(db().gpus().size(), 45U);
  int amd = 0;
  for (const auto& g : db().gpus()) {
    SCOPED_TRACE(g.id);
    EXPECT_FALSE(g.total_memory_source.empty());
    if (g.vendor == "amd") ++amd;
    // A derived total says so in its source text as well as in the flag.
    if (g.total_memory_derived) {
      EXPECT_TRUE(g.total_memory_source.find("DERIVED") != std::string::npos ||
                  g.total_memory_source.find("ESTIMATE") != std::string::npos ||
                  g.total_memory_source.find("assumed") != std::string::npos);
    }
  }
  EXPECT_GE(amd, 8);
  for (const char* id : {"GB10", "GH200-96GB", "GH200-144GB", "GB200", "MI300A"}) {
    EXPECT_TRUE(db().gpu(id).unified_memory) << id;
  }
  EXPECT_FALSE(db().gpu("H100-80GB").unified_memory);
  // GB10's total is measured (vLLM's startup check printed 121.69 GiB), not derived.
  EXPECT_FALSE(db().gpu("GB10").total_memory_derived);
  EXPECT_NEAR(static_cast<double>(db().gpu("GB10").total_memory_bytes) / (1 << 30), 121.69, 0.005);
}

// The derived-total rule (gpus.yaml header: nvidia-smi total minus 450 MiB) against the cards
// measured both ways in shared/reference/gpus.md and the modal-labs/modal-client#2797 nvidia-smi
// list: each (nvidia-smi MiB, CUDA/torch GiB) pair is written here from those sources.
TEST(GpuLookup, DerivedRuleReproducesMeasuredTotalsWithinQuarterGib) {
  struct Pair {
    const char* gpu;
    double nvidia_smi_mib;
    double cuda_total_gib;
  };
  const Pair pairs[] = {{"H100 80GB", 81559, 79.19}, {"RTX 3090", 24576, 23.58},
                        {"RTX 4090", 24564, 23.64},  {"RTX 5090", 32607, 31.36},
                        {"L4", 23034, 22.05},        {"A10G", 23028, 22.19},
                        {"T4", 15360, 14.75},        {"A10", 23028, 21.99}};
  constexpr double kReservedMib = 450.0;
  for (const auto& p : pairs) {
    const double derived_gib = (p.nvidia_smi_mib - kReservedMib) / 1024.0;
    EXPECT_LE(std::fabs(derived_gib - p.cuda_total_gib), 0.25) << p.gpu;
  }
  // And the database applies it: RTX 5070 Ti's nvidia-smi total 16303 MiB (vllm#34076).
  EXPECT_EQ(db().gpu("RTX-5070-Ti").total_memory_bytes, (16303LL - 450) << 20);
}

}  // namespace
