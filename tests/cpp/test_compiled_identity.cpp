// The compiled engine against the breakdowns the per-call engine computed before it (commit
// 0456cbc): 2,244 launches over every database model and GPU, every byte identical. It is a
// regression oracle, not a correctness test: a deliberate change to the model is written back
// with VRAMPLAN_GOLDEN_OUT=FILE (the test then reports how many launches changed, per engine
// version, and fails: a run that rewrites compares nothing). A model whose spec changed since
// the golden run fails too, naming the model, until its launches are rewritten.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
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

// Columns 18 on of a golden line, as the engine computes them now.
std::string outcome_columns(const Breakdown& b) {
  std::ostringstream out;
  out << std::setprecision(17);
  // The golden run named both CUDA OOMs at the KV allocation "oom_kv_alloc", as records do.
  const bool kv_alloc_oom =
      b.outcome == Outcome::CudagraphCaptureOom || b.outcome == Outcome::SamplerWarmupOom;
  out << (kv_alloc_oom ? std::string("oom_kv_alloc") : outcome_name(b.outcome)) << '\t'
      << b.config.gpu_memory_utilization << '\t' << b.config.max_model_len << '\t'
      << b.config.max_num_seqs << '\t' << b.config.max_num_batched_tokens << '\t'
      << b.config.block_size << '\t' << b.config.num_cudagraph_sizes << '\t' << b.num_blocks << '\t'
      << b.kv_tokens << '\t' << b.max_concurrency << '\t' << b.request_kv_bytes << '\t'
      << b.estimated_max_model_len << '\t' << b.startup_free_bytes << '\t' << b.host.required_bytes;
  for (const auto& r : b.ranks) out << '\t' << rank_text(r);
  return out.str();
}

std::string input_columns(const std::vector<std::string>& f) {
  std::string out;
  for (std::size_t i = 0; i < 18; ++i) out += f[i] + (i + 1 < 18 ? "\t" : "");
  return out;
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
  int newly_named = 0;
  std::map<std::string, int> stale_models;  // spec changed since the golden run
  std::ofstream rewritten;
  if (const char* out = std::getenv("VRAMPLAN_GOLDEN_OUT")) rewritten.open(out);
  std::map<std::string, int> changed_by_version;
  while (std::getline(in, line)) {
    const auto f = split(line, '\t');
    ASSERT_GE(f.size(), 20u) << line;
    ASSERT_TRUE(database().has_model(f[0])) << f[0] << " left the database: rewrite the golden";
    const bool stale = parameter_count(database().model(f[0])) != fingerprints[f[0]];
    if (stale && !rewritten.is_open()) {
      ++stale_models[f[0]];
      continue;
    }
    const Launch l = launch_of(f);
    SCOPED_TRACE(line.substr(0, 120));
    if (rewritten.is_open()) {
      std::string now;
      try {
        now = input_columns(f) + '\t' +
              outcome_columns(compute_breakdown(*l.spec, l.hardware, l.config));
      } catch (const ConfigError& e) {
        now = input_columns(f) + "\terror\t" + e.field();
      }
      if (now != line) ++changed_by_version[f[2]];
      rewritten << now << '\n';
      continue;
    }
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
  if (rewritten.is_open()) {
    for (const auto& [version, count] : changed_by_version) {
      std::cout << "golden: " << count << " launches changed at version " << version << '\n';
    }
    // The fingerprints the rewritten launches were computed with, for
    // golden/model_fingerprints.tsv.
    std::ofstream prints(std::string(std::getenv("VRAMPLAN_GOLDEN_OUT")) + ".fingerprints.tsv");
    for (const auto& [model, count] : fingerprints) {
      if (database().has_model(model)) {
        prints << model << '\t' << parameter_count(database().model(model)) << '\n';
      }
    }
    FAIL() << "VRAMPLAN_GOLDEN_OUT is set: the golden file was rewritten and nothing compared";
  }
  for (const auto& [model, launches] : stale_models) {
    ADD_FAILURE() << model << ": spec changed since the golden run (" << launches
                  << " launches): rewrite the golden with VRAMPLAN_GOLDEN_OUT and say why";
  }
  EXPECT_GE(compared, 2000);
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
