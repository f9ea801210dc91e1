// Log lines of vLLM 0.27+: the one-line KV line (0.28), "Using V2 Model Runner" (worker init),
// and the post-capture suggestion line whose wording changed with the 0.27 budget formula.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vramplan/log_parser.hpp"

using namespace vramplan;

namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(LogParser027, OneLineKvLineAndConsumedMemory) {
  // pub-103: vLLM 0.31.0 (tests/data/public_logs/pub-103.log, verbatim).
  const VllmLogFigures f = parse_vllm_log(read_fixture("public_logs/pub-103.log"));
  ASSERT_TRUE(f.kv_tokens && f.max_concurrency && f.max_concurrency_tokens);
  EXPECT_EQ(*f.kv_tokens, 460496);
  EXPECT_DOUBLE_EQ(*f.max_concurrency, 3.51);
  EXPECT_EQ(*f.max_concurrency_tokens, 131072);
  ASSERT_TRUE(f.consumed_gib);
  EXPECT_DOUBLE_EQ(*f.consumed_gib, 15.26);
  // Its "1.44 GiB for peak activation" includes the graph estimate: not the activation peak.
  EXPECT_FALSE(f.activation_peak_gib);
  EXPECT_DOUBLE_EQ(*f.kv_cache_gib, 56.21);
}

TEST(LogParser027, SuggestedKvCacheMemoryAndTheV2Runner) {
  // A public 0.27+ log (code-search index file id 61222544093; the index does not name the
  // repository): the suggestion line, verbatim.
  const std::string suggestion =
      "(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_worker.py:789] Free memory on device "
      "(112.26/119.63 GiB) on startup. Desired GPU memory utilization is (0.92, 110.06 GiB). "
      "Actual usage is 55.99 GiB for consumed memory (weights + non-torch), 3.78 GiB for peak "
      "activation, and 0.94 GiB for CUDAGraph memory. Replace gpu_memory_utilization config "
      "with `--kv-cache-memory=52830620611` (49.2 GiB) to fit into requested memory, or "
      "`--kv-cache-memory=55188796928` (51.4 GiB) to fully utilize gpu memory. Current kv cache "
      "memory in use is 50.29 GiB.\n";
  // vLLM 0.27.0 gpu_worker.py:385 logs "Using V2 Model Runner" (logger.info_once) when MRV2 runs;
  // the line below is written in vLLM's log format around that message.
  const std::string runner =
      "(EngineCore pid=492078) INFO 08-23 09:38:02 [gpu_worker.py:385] Using V2 Model Runner\n";
  const VllmLogFigures f = parse_vllm_log(runner + suggestion);
  ASSERT_TRUE(f.model_runner_v2);
  EXPECT_TRUE(*f.model_runner_v2);
  ASSERT_TRUE(f.suggested_kv_cache_memory_bytes);
  EXPECT_EQ(*f.suggested_kv_cache_memory_bytes, 52830620611);
  EXPECT_DOUBLE_EQ(*f.consumed_gib, 55.99);
  EXPECT_DOUBLE_EQ(*f.gpu_memory_utilization, 0.92);
  EXPECT_DOUBLE_EQ(*f.gpu_total_gib, 119.63);
  // Without the worker-init line nothing says which runner ran.
  EXPECT_FALSE(parse_vllm_log(suggestion).model_runner_v2);
}

TEST(LogParser027, Mrv2ProfilingCaptureIsTheEstimate) {
  // MRV2 from 0.29 captures graphs into a throw-away pool before the KV budget and logs
  // "Graph capturing finished" for it, then again for the real capture after the KV cache
  // (shared/reference/vllm-0.27-0.33.md section 6). Lines written in vLLM's format for this test,
  // not a record.
  const std::string log =
      "INFO 10-06 17:00:02 [gpu_worker.py:385] Using V2 Model Runner\n"
      "INFO 10-06 17:00:30 [cudagraph_utils.py:300] Graph capturing finished in 3 secs, took "
      "0.25 GiB\n"
      "INFO 10-06 17:00:33 [gpu_worker.py:692] Available KV cache memory: 56.21 GiB\n"
      "INFO 10-06 17:00:40 [model_runner.py:800] Graph capturing finished in 6 secs, took "
      "0.23 GiB\n";
  const VllmLogFigures f = parse_vllm_log(log);
  ASSERT_TRUE(f.cudagraph_estimate_gib && f.cudagraph_gib);
  EXPECT_DOUBLE_EQ(*f.cudagraph_estimate_gib, 0.25);
  EXPECT_DOUBLE_EQ(*f.cudagraph_gib, 0.23);
  // The V1 runner (no "Using V2 Model Runner") captures only after the KV cache: the first
  // capture line is the real one, as before.
  const VllmLogFigures v1 = parse_vllm_log(log.substr(log.find('\n') + 1));
  EXPECT_DOUBLE_EQ(*v1.cudagraph_gib, 0.25);
}
