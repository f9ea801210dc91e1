// Engine-wide names: vLLM eras, startup outcomes, Model Runner V2 routings.
#include "vramplan/engine.hpp"

#include "vramplan/compiled.hpp"

namespace vramplan {

const char* engine_era_name(EngineEra era) noexcept {
  switch (era) {
    case EngineEra::V0:
      return "v0";
    case EngineEra::V1Early:
      return "v1-early (0.8-0.10)";
    case EngineEra::V1Mid:
      return "v1 (0.11-0.20)";
    case EngineEra::V1Latest:
      return "v1 (>=0.21)";
  }
  return "?";
}

const char* outcome_name(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::Started:
      return "started";
    case Outcome::InsufficientKvForMaxModelLen:
      return "insufficient_kv_for_max_model_len";
    case Outcome::NoKvMemory:
      return "oom_kv_alloc";  // the records' name for it
    case Outcome::StartupFreeMemory:
      return "startup_free_memory";
    case Outcome::OomAtLoad:
      return "oom_at_load";
    case Outcome::HostOomKilled:
      return "host_oom_killed";
    case Outcome::CudagraphCaptureOom:
      return "cudagraph_capture_oom";  // records call both this and the next oom_kv_alloc
    case Outcome::SamplerWarmupOom:
      return "sampler_warmup_oom";
    case Outcome::CudagraphProfilingOom:
      return "cudagraph_profiling_oom";
    case Outcome::StateBlocksBelowMaxNumSeqs:
      return "state_blocks_below_max_num_seqs";
  }
  return "?";
}

const char* model_runner_v2_routing_name(ModelRunnerV2Routing routing) noexcept {
  switch (routing) {
    case ModelRunnerV2Routing::None:
      return "none";
    case ModelRunnerV2Routing::Qwen3Dense:
      return "qwen3_dense";
    case ModelRunnerV2Routing::Dense:
      return "dense";
    case ModelRunnerV2Routing::All:
      return "all";
  }
  return "?";
}

const EngineProfile& Breakdown::profile() const noexcept {
  static const EngineProfile kUnset;  // a breakdown no launch filled in
  return rules ? *rules : kUnset;
}

}  // namespace vramplan
