// The compiled engine against the breakdowns the per-call engine computed before it (commit
// 0456cbc): 2,244 launches over every database model and GPU, every byte identical (0.8.5 and
// 0.10.1 lines regenerated for the per-release rows, tests/data/README.md).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, sep)) out.push_back(field);
  return out;
}

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

struct Launch {
  const ModelSpec* spec = nullptr;
  HardwareConfig hardware;
  EngineConfig config;
};

// Columns 0-17 of a golden line: model, gpu, version, TP, PP, utilization, context, sequences,
// batched tokens, block size, KV dtype, eager, LLM defaults, offload, LoRA slots, speculative
// tokens, other tenants, host RAM (-1 / -1.0 = unset).
Launch launch_of(const std::vector<std::string>& f) {
  Launch l;
  l.spec = &database().model(f[0]);
  l.hardware.gpu = database().gpu(f[1]);
  l.config.engine_version = f[2] == "-" ? "" : f[2];
  l.config.tensor_parallel_size = std::stoi(f[3]);
  l.config.pipeline_parallel_size = std::stoi(f[4]);
  if (std::stod(f[5]) > 0) l.config.gpu_memory_utilization = std::stod(f[5]);
  if (std::stoll(f[6]) > 0) l.config.max_model_len = std::stoll(f[6]);
  if (std::stoll(f[7]) > 0) l.config.max_num_seqs = std::stoll(f[7]);
  if (std::stoll(f[8]) > 0) l.config.max_num_batched_tokens = std::stoll(f[8]);
  if (std::stoi(f[9]) > 0) l.config.block_size = std::stoi(f[9]);
  l.config.kv_cache_dtype = f[10];
  l.config.enforce_eager = f[11] == "1";
  l.config.llm_class = f[12] == "1";
  l.config.cpu_offload_bytes = std::stoll(f[13]);
  l.config.max_loras = std::stoi(f[14]);
  l.config.num_speculative_tokens = std::stoi(f[15]);
  l.hardware.num_gpus = l.config.tensor_parallel_size * l.config.pipeline_parallel_size;
  l.hardware.memory_used_by_others_bytes = std::stoll(f[16]);
  l.hardware.host_ram_bytes = std::stoll(f[17]);
  return l;
}

std::string rank_text(const RankBreakdown& r) {
  std::ostringstream out;
  out << r.weights_bytes << ',' << r.activation_peak_bytes << ',' << r.non_torch_bytes << ','
      << r.cudagraph_bytes << ',' << r.kv_cache_bytes << ',' << r.kv_bytes_per_token << ','
      << r.headroom_bytes << ',' << r.post_allocation_bytes;
  return out.str();
}

}  // namespace

TEST(CompiledIdentity, EveryGoldenLaunchGivesTheSameBytes) {
  std::map<std::string, std::int64_t> fingerprints;
  {
    std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/golden/model_fingerprints.tsv");
    std::string line;
    while (std::getline(in, line)) {
      const auto f = split(line, '\t');
      fingerprints[f[0]] = std::stoll(f[1]);
    }
  }
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/golden/breakdowns.tsv");
  ASSERT_TRUE(in.good());
  std::string line;
  int compared = 0;
  int skipped = 0;
  int newly_named = 0;
  while (std::getline(in, line)) {
    const auto f = split(line, '\t');
    ASSERT_GE(f.size(), 20u) << line;
    if (!database().has_model(f[0]) ||
        parameter_count(database().model(f[0])) != fingerprints[f[0]]) {
      ++skipped;  // the spec changed since the golden run
      continue;
    }
    const Launch l = launch_of(f);
    SCOPED_TRACE(line.substr(0, 120));
    if (f[18] == "error") {
      try {
        (void)compute_breakdown(*l.spec, l.hardware, l.config);
        ADD_FAILURE() << "accepted a launch the engine refused (" << f[19] << ")";
      } catch (const ConfigError& e) {
        EXPECT_EQ(e.field(), f[19]);
      }
      ++compared;
      continue;
    }
    const Breakdown b = compute_breakdown(*l.spec, l.hardware, l.config);
    // The golden run named both CUDA OOMs at the KV allocation "oom_kv_alloc", as records do.
    const std::string outcome =
        b.outcome == Outcome::CudagraphCaptureOom || b.outcome == Outcome::SamplerWarmupOom
            ? "oom_kv_alloc"
            : outcome_name(b.outcome);
    if (b.outcome == Outcome::CudagraphProfilingOom) {
      // Checked since the golden run (graph profiling's minimal KV cache, >= 0.21): it may
      // only name an earlier failure of a launch that failed anyway, never stop one that started.
      EXPECT_NE(f[18], "started");
      ++newly_named;
    } else {
      EXPECT_EQ(outcome, f[18]);
    }
    EXPECT_DOUBLE_EQ(b.config.gpu_memory_utilization, std::stod(f[19]));
    EXPECT_EQ(b.config.max_model_len, std::stoll(f[20]));
    EXPECT_EQ(b.config.max_num_seqs, std::stoll(f[21]));
    EXPECT_EQ(b.config.max_num_batched_tokens, std::stoll(f[22]));
    EXPECT_EQ(b.config.block_size, std::stoi(f[23]));
    EXPECT_EQ(b.config.num_cudagraph_sizes, std::stoi(f[24]));
    EXPECT_EQ(b.num_blocks, std::stoll(f[25]));
    EXPECT_EQ(b.kv_tokens, std::stoll(f[26]));
    EXPECT_DOUBLE_EQ(b.max_concurrency, std::stod(f[27]));
    EXPECT_EQ(b.request_kv_bytes, std::stoll(f[28]));
    EXPECT_EQ(b.estimated_max_model_len, std::stoll(f[29]));
    EXPECT_EQ(b.startup_free_bytes, std::stoll(f[30]));
    EXPECT_EQ(b.host.required_bytes, std::stoll(f[31]));
    ASSERT_EQ(b.ranks.size() + 32, f.size());
    for (std::size_t r = 0; r < b.ranks.size(); ++r) {
      EXPECT_EQ(rank_text(b.ranks[r]), f[32 + r]) << "rank " << r;
    }
    ++compared;
  }
  EXPECT_GE(compared, 2000) << skipped << " skipped";
  EXPECT_LE(newly_named, 10);
}

// The sweep's allocation-free path against full breakdowns at the same knobs.
TEST(CompiledIdentity, SweepRowsMatchBreakdowns) {
  for (const char* model : {"meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3",
                            "google/gemma-2-9b-it", "Qwen/Qwen3-30B-A3B"}) {
    HardwareConfig hw;
    hw.gpu = database().gpu("H100-80GB");
    hw.num_gpus = 8;
    EngineConfig config;
    config.tensor_parallel_size = std::string(model).find("DeepSeek") != std::string::npos ? 8 : 1;
    const CompiledLaunch launch(std::make_shared<const ModelSpec>(database().model(model)), hw,
                                config);
    SweepGrid grid;
    grid.gpu_memory_utilization = {0.5, 0.9, 0.97, 1.5};
    grid.max_model_len = {4096, 8192};
    grid.max_num_seqs = {8, 256};
    grid.max_num_batched_tokens = {2048, 16384};
    const std::int64_t rows = sweep_size(grid);
    ASSERT_EQ(rows, 32);
    std::vector<double> util(rows), conc(rows);
    std::vector<std::int64_t> len(rows), seqs(rows), toks(rows), kv(rows), tokens(rows);
    std::vector<std::int8_t> outcome(rows);
    sweep(launch, launch_knobs(config), grid,
          SweepColumns{util.data(), len.data(), seqs.data(), toks.data(), kv.data(), tokens.data(),
                       conc.data(), outcome.data()});
    for (std::int64_t i = 0; i < rows; ++i) {
      SCOPED_TRACE(std::string(model) + " row " + std::to_string(i));
      EXPECT_EQ(util[i], grid.gpu_memory_utilization[static_cast<std::size_t>(i / 8)]);
      if (util[i] > 1.0) {
        EXPECT_EQ(outcome[i], -1);
        continue;
      }
      EngineConfig at = config;
      at.gpu_memory_utilization = util[i];
      at.max_model_len = len[i];
      at.max_num_seqs = seqs[i];
      at.max_num_batched_tokens = toks[i];
      const Breakdown b = compute_breakdown(database().model(model), hw, at);
      std::int64_t min_kv = b.ranks.front().kv_cache_bytes;
      for (const auto& r : b.ranks) min_kv = std::min(min_kv, r.kv_cache_bytes);
      EXPECT_EQ(outcome[i], static_cast<std::int8_t>(b.outcome));
      EXPECT_EQ(kv[i], min_kv);
      EXPECT_EQ(tokens[i], b.kv_tokens);
      EXPECT_DOUBLE_EQ(conc[i], b.max_concurrency);
    }
  }
}

TEST(CompiledIdentity, OversizedGridIsRefused) {
  SweepGrid grid;
  grid.max_model_len.assign(10000, 4096);
  grid.max_num_seqs.assign(10000, 1);
  try {
    (void)sweep_size(grid);
    FAIL() << "a 100 M point grid was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("50000000"), std::string::npos) << e.what();
  }
}
