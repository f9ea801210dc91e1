// The cause classifier: one pass over the lines of the log (and of the kernel excerpt), each
// matched against fixed phrases with string_view::find, then one decision in a fixed order of
// precedence (the engine's own verdicts first, then a CUDA OOM placed by its traceback or by
// the startup phase it interrupted, then the kernel's OOM killer, then any other failure).
#include "vramplan/diagnose.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

#include "enum_names.hpp"
#include "json_optional.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/runtime_vocabulary.hpp"
#include "vramplan/text_scan.hpp"
#include "vramplan/utf8.hpp"
#include "vramplan/vllm_vocabulary.hpp"

namespace vramplan {
namespace {

namespace vocab = vllm_vocabulary;
namespace torch = runtime_vocabulary;
namespace kernel = runtime_vocabulary;

constexpr std::size_t kHeadBytes = std::size_t{4} << 20;  // launch settings live at the start
constexpr std::size_t kMaxEvidence = 12;
constexpr std::size_t kMaxEvidenceChars = 400;
constexpr std::size_t kMaxPerCategory = 6;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

using text::after;
using text::contains;
using text::npos;
using text::starts_with;
using text::trim;

// Head and tail of an over-long text, joined at a line break.
std::string_view bounded(std::string_view text, std::string& storage) {
  if (text.size() <= kMaxDiagnoseInputBytes) return text;
  storage.reserve(kMaxDiagnoseInputBytes + 1);
  storage.append(text.substr(0, kHeadBytes));
  storage.push_back('\n');
  storage.append(text.substr(text.size() - (kMaxDiagnoseInputBytes - kHeadBytes)));
  return storage;
}

// "2026-04-19 11:40:35.639 | " (docker compose), "(EngineCore pid=7) ", "[rank0]: ",
// "ERROR 04-19 09:40:35 [core.py:1132] ": removed so evidence reads as the message.
std::string_view strip_decorations(std::string_view s) {
  s = text::strip_process_prefix(text::strip_compose_timestamp(s));
  return text::strip_level_header(s, vocab::kLogLevels);
}

// A size in whole bytes ("1.02 GiB", "786.00 MiB", "0 bytes", "37760kB").
std::optional<std::int64_t> whole_bytes(const std::optional<text::Size>& size) {
  if (!size || size->bytes < 0.0 || size->bytes > 9.0e18) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(size->bytes));
}

std::optional<std::int64_t> bytes_after(std::string_view s, std::string_view phrase) {
  return whole_bytes(text::size_after(s, phrase));
}

// A list of the vocabulary's phrases, any of which marks the same thing.
class Phrases {
 public:
  template <std::size_t N>
  constexpr Phrases(const std::string_view (&list)[N]) : first_(list), count_(N) {}  // NOLINT
  bool found_in(std::string_view line) const {
    for (std::size_t i = 0; i < count_; ++i) {
      if (contains(line, first_[i])) return true;
    }
    return false;
  }

 private:
  const std::string_view* first_;
  std::size_t count_;
};

std::string gib(double value) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f GiB", value);
  return buf;
}
std::string gib_bytes(std::int64_t bytes) { return gib(static_cast<double>(bytes) / kGiB); }

// Startup phases in the order vLLM passes them; a log only moves forward.
enum class Phase : std::uint8_t {
  None,
  Loading,
  Profiling,
  CudagraphProfiling,
  KvAllocated,
  Capturing,
  Captured,
  Running,
};

// Traceback frames that place an OOM, as bits.
enum Frame : unsigned {
  kFrameCudagraphProfiling = 1u << 0,
  kFrameCapture = 1u << 1,
  kFrameSampler = 1u << 2,
  kFrameProfileRun = 1u << 3,
  kFrameWarmUp = 1u << 4,
  kFrameLoad = 1u << 5,
  kFrameKvAlloc = 1u << 6,
  kFrameRuntime = 1u << 7,
};
constexpr std::size_t kFrameKinds = 8;

std::size_t frame_index(unsigned frame) {
  std::size_t i = 0;
  while (i + 1 < kFrameKinds && !(frame & (1u << i))) ++i;
  return i;
}

// The marker kind whose lines show where an OOM of this phase was.
unsigned frame_of_phase(const std::string& phase, unsigned frames) {
  if (phase == "cudagraph_profiling") return kFrameCudagraphProfiling;
  if (phase == "sampler_warmup") return kFrameSampler;
  if (phase == "profile_run") return (frames & kFrameSampler) ? kFrameSampler : kFrameProfileRun;
  if (phase == "cudagraph_capture") return kFrameCapture;
  if (phase == "loading") return kFrameLoad;
  if (phase == "kv_cache_allocation") return kFrameKvAlloc;
  return kFrameRuntime;
}

struct FrameMarker {
  Phrases phrases;
  unsigned frame;
};
constexpr FrameMarker kFrameMarkers[] = {
    {vocab::kFramesCudagraphProfiling, kFrameCudagraphProfiling},
    {vocab::kFramesCapture, kFrameCapture},
    {vocab::kFramesSampler, kFrameSampler},
    {vocab::kFramesProfileRun, kFrameProfileRun},
    {vocab::kFramesWarmUp, kFrameWarmUp},
    {vocab::kFramesLoad, kFrameLoad},
    {vocab::kFramesKvAlloc, kFrameKvAlloc},
    {vocab::kFramesRuntime, kFrameRuntime},
};

// The OOM's place from its traceback; the order is the nesting (innermost cause first).
std::string phase_from_frames(unsigned frames) {
  if (frames & kFrameCudagraphProfiling) return "cudagraph_profiling";
  if (frames & kFrameSampler) {
    // The profile run warms the sampler too; that peak is inside the budget.
    const bool in_profile = (frames & kFrameProfileRun) && !(frames & kFrameWarmUp);
    return in_profile ? "profile_run" : "sampler_warmup";
  }
  if (frames & kFrameCapture) return "cudagraph_capture";
  if (frames & kFrameProfileRun) return "profile_run";
  if (frames & kFrameLoad) return "loading";
  if (frames & kFrameKvAlloc) return "kv_cache_allocation";
  if (frames & kFrameRuntime) return "runtime";
  return "";
}

constexpr std::array kPhaseNames{
    std::pair{Phase::Loading, "loading"},
    std::pair{Phase::Profiling, "profile_run"},
    std::pair{Phase::CudagraphProfiling, "cudagraph_profiling"},
    std::pair{Phase::KvAllocated, "kv_cache_allocation"},
    std::pair{Phase::Capturing, "cudagraph_capture"},
    std::pair{Phase::Captured, "sampler_warmup"},
    std::pair{Phase::Running, "runtime"},
};

std::string phase_from_log(Phase phase) { return name_in(kPhaseNames, phase, ""); }

bool is_oom_line(std::string_view line) {
  return contains(line, torch::kCudaOutOfMemory) || contains(line, torch::kOutOfMemoryError) ||
         contains(line, torch::kCudaErrorOutOfMemory) ||
         contains(line, torch::kCudaErrorMemoryAllocation) ||
         contains(line, vocab::kOomWarmingUpSampler);
}

// Lines kept per kind of evidence, de-duplicated, in order of appearance.
class Evidence {
 public:
  void add(std::string_view raw) {
    if (lines_.size() >= kMaxPerCategory) return;
    const std::string cleaned = text::printable(strip_decorations(raw));
    std::string text(trim(utf8::truncate(cleaned, kMaxEvidenceChars)));
    if (text.empty() || std::find(lines_.begin(), lines_.end(), text) != lines_.end()) return;
    lines_.push_back(std::move(text));
  }
  const std::vector<std::string>& lines() const { return lines_; }
  void clear() { lines_.clear(); }

 private:
  std::vector<std::string> lines_;
};

class Scanner {
 public:
  void log_line(std::string_view line);
  void kernel_line(std::string_view line) {
    if (kills_.kernel_line(line)) kill_lines_.add(line);
  }
  Diagnosis finish(VllmLogFigures figures);

 private:
  void track_phase(std::string_view line);
  void oom_line(std::string_view line);

  // finish(): one per cause, each setting d's cause, explanation and advice and naming the
  // evidence it rests on.
  using Shown = std::vector<const Evidence*>;
  void explain_startup_free(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const;
  void explain_max_model_len(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const;
  void explain_state_blocks(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const;
  void explain_kv_budget(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const;
  void explain_cuda_oom(const VllmLogFigures& f, Diagnosis& d, Shown& shown);
  void explain_oom_kill(Diagnosis& d, Shown& shown) const;

  Phase phase_ = Phase::None;
  unsigned frames_ = 0;                            // markers seen since the last "Traceback" line
  std::array<Evidence, kFrameKinds> frame_lines_;  // ... and their lines, per marker kind
  bool traceback_ = false;

  bool oom_ = false;
  std::string oom_phase_;
  // A request that failed ("Request req_1 failed: OOM") means the engine was serving traffic:
  // an OOM the startup lines do not place happened at run time.
  Evidence failed_requests_;
  bool oom_phase_from_frames_ = false;
  std::optional<std::int64_t> oom_tried_bytes_;
  std::optional<std::int64_t> oom_others_bytes_;
  std::optional<std::int64_t> profiling_kv_blocks_;
  OomKillReader kills_;

  Evidence oom_lines_, decisive_frames_, startup_free_, insufficient_, no_kv_, kill_lines_,
      profiling_setup_, phase_lines_, state_blocks_;
};

void Scanner::track_phase(std::string_view line) {
  struct Marker {
    Phrases phrases;
    Phase phase;
  };
  static constexpr Marker kMarkers[] = {
      {vocab::kPhaseLoading, Phase::Loading},
      {vocab::kPhaseWeightsLoaded, Phase::Profiling},
      {vocab::kPhaseCudagraphProfiling, Phase::CudagraphProfiling},
      {vocab::kPhaseKvAllocated, Phase::KvAllocated},
      {vocab::kPhaseCapturing, Phase::Capturing},
      {vocab::kPhaseCaptured, Phase::Captured},
      {vocab::kPhaseRunning, Phase::Running},
  };
  for (const Marker& m : kMarkers) {
    if (m.phase > phase_ && m.phrases.found_in(line)) {
      phase_ = m.phase;
      phase_lines_.clear();
      phase_lines_.add(line);
    }
  }
}

void Scanner::oom_line(std::string_view line) {
  oom_lines_.add(line);
  // Places the OOM from the first traceback that names a phase, else from the log's phase.
  const std::string from_frames = phase_from_frames(frames_);
  if (!from_frames.empty() && !oom_phase_from_frames_) {
    oom_phase_ = from_frames;
    oom_phase_from_frames_ = true;
    decisive_frames_ = frame_lines_[frame_index(frame_of_phase(from_frames, frames_))];
  } else if (!oom_) {
    oom_phase_ = phase_from_log(phase_);
  }
  oom_ = true;
  if (!oom_tried_bytes_) {
    oom_tried_bytes_ = bytes_after(line, torch::kTriedToAllocate);
    if (oom_tried_bytes_ && contains(line, torch::kThisProcessHas)) {
      // "Process 162519 has 20.28 GiB memory in use." names the other tenants when torch
      // also names this process ("this process has"); without it one of them is this one.
      std::int64_t others = 0;
      bool any = false;
      std::size_t at = 0;
      while ((at = after(line, torch::kProcess, at)) != npos) {
        const auto pid = text::read_number(line, at);
        if (!pid || !starts_with(line.substr(pid->end), torch::kProcessHas)) continue;
        if (const auto b = bytes_after(line.substr(pid->end), torch::kProcessHas)) {
          others += *b;
          any = true;
        }
      }
      if (any) oom_others_bytes_ = others;
    }
  }
}

void Scanner::log_line(std::string_view line) {
  if (contains(line, torch::kTraceback)) {
    frames_ = 0;
    for (Evidence& e : frame_lines_) e.clear();
    traceback_ = true;
  }
  for (const FrameMarker& m : kFrameMarkers) {
    if (m.phrases.found_in(line)) {
      frames_ |= m.frame;
      frame_lines_[frame_index(m.frame)].add(line);
    }
  }
  track_phase(line);
  if (contains(line, vocab::kNumGpuBlocksOverride)) {
    profiling_kv_blocks_ = text::count_after(line, vocab::kNumGpuBlocksOverride);
    profiling_setup_.add(line);
  }
  if (contains(line, vocab::kSettingAttentionBlockSize) ||
      contains(line, vocab::kProfilingCudaGraphMemory)) {
    profiling_setup_.add(line);
  }
  if (is_oom_line(line)) oom_line(line);
  if (contains(line, vocab::kRequest) && contains(line, vocab::kFailed)) {
    failed_requests_.add(line);
  }
  if (contains(line, vocab::kFreeMemoryOnDevice) && contains(line, vocab::kIsLessThanDesired)) {
    startup_free_.add(line);
  }
  if (contains(line, vocab::kGibKvCacheIsNeeded) || contains(line, vocab::kLargerThanKvTokens)) {
    insufficient_.add(line);
  }
  if (contains(line, vocab::kExceedsAvailableMambaCacheBlocks)) state_blocks_.add(line);
  const std::size_t kv_budget = after(line, vocab::kAvailableKvCacheMemory);
  if (contains(line, vocab::kNoAvailableMemoryForCacheBlocks) ||
      (kv_budget != npos && starts_with(line.substr(text::skip_spaces(line, kv_budget)), "-"))) {
    no_kv_.add(line);
  }
  if (kills_.log_line(line)) kill_lines_.add(line);
}

Advice lower(std::string_view knob, nlohmann::json at_most = nullptr) {
  return Advice{std::string(knob), AdviceAction::Lower, std::move(at_most)};
}
Advice raise(std::string_view knob) {
  return Advice{std::string(knob), AdviceAction::Raise, nullptr};
}
Advice set(std::string_view knob, nlohmann::json value) {
  return Advice{std::string(knob), AdviceAction::Set, std::move(value)};
}

void Scanner::explain_startup_free(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const {
  d.cause = FailureCause::GpuMemoryUtilizationOvershoot;
  shown.push_back(&startup_free_);
  d.explanation = "vLLM's startup check found less free GPU memory than --gpu-memory-utilization";
  if (f.gpu_memory_utilization) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.2f", *f.gpu_memory_utilization);
    d.explanation += buf;
  }
  d.explanation += " asks for";
  if (f.startup_free_gib && f.gpu_total_gib && f.startup_desired_gib) {
    d.explanation += " (" + gib(*f.startup_free_gib) + " free of " + gib(*f.gpu_total_gib) + ", " +
                     gib(*f.startup_desired_gib) + " requested): other processes hold " +
                     gib(*f.gpu_total_gib - *f.startup_free_gib) + " on that GPU";
  }
  d.explanation +=
      ". The utilization is a fraction of the whole device, not of what is free: lower "
      "--gpu-memory-utilization below free/total, or free the GPU.";
  d.advice = {lower(knob::kGpuMemoryUtilization)};
}

void Scanner::explain_max_model_len(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const {
  d.cause = FailureCause::MaxModelLenExceedsKv;
  shown.push_back(&insufficient_);
  shown.push_back(&phase_lines_);
  d.explanation =
      "The KV cache left after weights, activations and non-torch memory cannot hold "
      "one request of max_model_len";
  if (f.max_model_len) d.explanation += " (" + std::to_string(*f.max_model_len) + " tokens)";
  if (f.needed_kv_gib && f.kv_cache_gib) {
    d.explanation +=
        ": it needs " + gib(*f.needed_kv_gib) + ", the budget left " + gib(*f.kv_cache_gib);
  }
  if (f.estimated_max_model_len) {
    d.explanation +=
        "; vLLM estimates at most " + std::to_string(*f.estimated_max_model_len) + " tokens fit";
  }
  d.explanation += ". Lower --max-model-len, or raise --gpu-memory-utilization, or use fp8 KV.";
  d.advice = {lower(knob::kMaxModelLen, optional_json(f.estimated_max_model_len)),
              raise(knob::kGpuMemoryUtilization), set(knob::kKvCacheDtype, "fp8")};
}

void Scanner::explain_state_blocks(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const {
  d.cause = FailureCause::StateBlocksBelowMaxNumSeqs;
  shown.push_back(&state_blocks_);
  d.explanation =
      "The model keeps a Mamba / linear-attention state per sequence, one KV-pool "
      "block each, and with FULL CUDA graphs vLLM refuses a max_num_seqs";
  if (f.max_num_seqs) d.explanation += " (" + std::to_string(*f.max_num_seqs) + ")";
  d.explanation += " above the pool's blocks";
  if (f.state_blocks) d.explanation += " (" + std::to_string(*f.state_blocks) + ")";
  d.explanation +=
      ". The memory is not short: lower --max-num-seqs to the block count (the scheduler then "
      "queues the rest), or raise --gpu-memory-utilization for more blocks.";
  d.advice = {lower(knob::kMaxNumSeqs, optional_json(f.state_blocks)),
              raise(knob::kGpuMemoryUtilization)};
}

void Scanner::explain_kv_budget(const VllmLogFigures& f, Diagnosis& d, Shown& shown) const {
  d.cause = FailureCause::KvBudgetExhausted;
  shown.push_back(&no_kv_);
  shown.push_back(&phase_lines_);
  d.explanation = "Nothing was left for KV cache blocks: ";
  if (f.weights_gib) d.explanation += "weights " + gib(*f.weights_gib) + ", ";
  if (f.activation_peak_gib)
    d.explanation += "activation peak " + gib(*f.activation_peak_gib) + ", ";
  if (f.non_torch_gib) d.explanation += "non-torch " + gib(*f.non_torch_gib) + ", ";
  d.explanation += "the rest of gpu_memory_utilization x total";
  if (f.kv_cache_gib) d.explanation += " came to " + gib(*f.kv_cache_gib);
  d.explanation +=
      ". More GPU memory per rank is needed: higher --gpu-memory-utilization if the GPU is "
      "free, else quantized weights or more tensor parallelism.";
  d.advice = {raise(knob::kGpuMemoryUtilization), raise(knob::kTensorParallelSize)};
}

void Scanner::explain_cuda_oom(const VllmLogFigures& f, Diagnosis& d, Shown& shown) {
  if (oom_phase_.empty() && !failed_requests_.lines().empty()) {
    oom_phase_ = "runtime";
    phase_lines_ = failed_requests_;
  }
  d.oom_phase = oom_phase_;
  const std::string tried =
      oom_tried_bytes_ ? " (tried to allocate " + gib_bytes(*oom_tried_bytes_) + ")" : "";
  shown.push_back(&oom_lines_);
  shown.push_back(&decisive_frames_);
  if (oom_phase_ == "loading") {
    d.cause = FailureCause::WeightsDoNotFit;
    shown.push_back(&phase_lines_);
    d.explanation = "CUDA ran out of memory while the weights were loading" + tried +
                    ": one rank's weights do not fit the GPU. No --gpu-memory-utilization "
                    "fixes this: quantized weights, more tensor or pipeline parallelism, or "
                    "--cpu-offload-gb do.";
    d.advice = {raise(knob::kTensorParallelSize), raise(knob::kPipelineParallelSize),
                raise(knob::kCpuOffloadGb)};
  } else if (oom_phase_ == "profile_run") {
    d.cause = FailureCause::ActivationPeakOom;
    shown.push_back(&phase_lines_);
    d.explanation = "CUDA ran out of memory in the profile run" + tried +
                    ", the forward pass of max_num_batched_tokens tokens (";
    d.explanation += f.max_num_batched_tokens ? std::to_string(*f.max_num_batched_tokens)
                                              : std::string("engine default");
    d.explanation +=
        ") and the sampler on max_num_seqs rows of fp32 logits, before the KV cache is sized. "
        "Lower --max-num-batched-tokens (and --max-num-seqs).";
    d.advice = {lower(knob::kMaxNumBatchedTokens), lower(knob::kMaxNumSeqs)};
  } else if (oom_phase_ == "cudagraph_profiling") {
    d.cause = FailureCause::CudagraphProfilingOom;
    shown.push_back(&profiling_setup_);
    d.explanation = "CUDA ran out of memory in profile_cudagraph_memory" + tried +
                    ": to measure CUDA graphs vLLM first allocates a minimal KV cache "
                    "(_init_minimal_kv_cache_for_profiling)";
    if (profiling_kv_blocks_) {
      d.explanation +=
          " of " + std::to_string(*profiling_kv_blocks_) + " blocks (max_cudagraph_capture_size)";
    }
    if (f.block_size) {
      d.explanation += " of " + std::to_string(*f.block_size) +
                       " tokens each (a hybrid model's attention block, widened to the "
                       "Mamba page)";
    }
    d.explanation +=
        ". This happens before the KV budget is applied, so lowering "
        "--gpu-memory-utilization cannot help. --enforce-eager skips it; fewer --max-num-seqs "
        "(smaller capture sizes) or no speculative decoding shrink it.";
    d.advice = {set(knob::kEnforceEager, true), lower(knob::kMaxNumSeqs)};
  } else if (oom_phase_ == "kv_cache_allocation") {
    d.cause = FailureCause::GpuMemoryUtilizationOvershoot;
    shown.push_back(&phase_lines_);
    d.explanation = "CUDA ran out of memory allocating the KV cache the profile had sized" + tried +
                    ": memory counted as free was gone by then (another process on the GPU, or "
                    "--gpu-memory-utilization too close to 1). Lower it, or free the GPU.";
    if (oom_others_bytes_) {
      d.explanation += " Other processes held " + gib_bytes(*oom_others_bytes_) + ".";
    }
    d.advice = {lower(knob::kGpuMemoryUtilization)};
  } else if (oom_phase_ == "cudagraph_capture") {
    d.cause = FailureCause::CudagraphCaptureOom;
    shown.push_back(&phase_lines_);
    d.explanation =
        "CUDA ran out of memory capturing CUDA graphs after the KV cache was "
        "allocated" +
        tried +
        ": before vLLM 0.21 graph memory was not in the budget and came out of the "
        "1 - gpu_memory_utilization headroom. --enforce-eager avoids it; a lower "
        "--gpu-memory-utilization or fewer --max-num-seqs (fewer, smaller graphs) "
        "leave room for it.";
    d.advice = {set(knob::kEnforceEager, true), lower(knob::kGpuMemoryUtilization),
                lower(knob::kMaxNumSeqs)};
  } else if (oom_phase_ == "sampler_warmup") {
    d.cause = FailureCause::SamplerWarmupOom;
    shown.push_back(&phase_lines_);
    d.explanation =
        "CUDA ran out of memory warming up the sampler after the KV cache was "
        "allocated" +
        tried + ": max_num_seqs (";
    d.explanation += f.max_num_seqs ? std::to_string(*f.max_num_seqs) : std::string("default");
    d.explanation +=
        ") dummy requests of fp32 vocabulary logits, outside the gpu_memory_utilization "
        "budget. Fewer --max-num-seqs fixes it; a lower --gpu-memory-utilization leaves room.";
    d.advice = {lower(knob::kMaxNumSeqs), lower(knob::kGpuMemoryUtilization)};
  } else if (oom_phase_ == "runtime") {
    d.cause = FailureCause::RuntimeOom;
    shown.push_back(&phase_lines_);
    d.explanation = "CUDA ran out of memory after startup" + tried +
                    ": a burst (long prompts, many sequences, logprobs) or fragmentation went "
                    "past the headroom. Leave more headroom (lower --gpu-memory-utilization), "
                    "cap --max-num-batched-tokens / --max-num-seqs, and try "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
    if (oom_others_bytes_) {
      d.explanation += " Other processes held " + gib_bytes(*oom_others_bytes_) + ".";
    }
    d.advice = {lower(knob::kGpuMemoryUtilization), lower(knob::kMaxNumBatchedTokens),
                lower(knob::kMaxNumSeqs)};
  } else {
    d.cause = FailureCause::Unknown;
    d.explanation = "CUDA ran out of memory" + tried +
                    ", but neither a traceback nor the startup lines say where; paste the "
                    "whole log (from the vLLM banner to the error).";
  }
  if (oom_others_bytes_ && d.cause != FailureCause::GpuMemoryUtilizationOvershoot &&
      d.cause != FailureCause::RuntimeOom) {
    d.explanation += " Other processes held " + gib_bytes(*oom_others_bytes_) + " of the GPU.";
  }
}

void Scanner::explain_oom_kill(Diagnosis& d, Shown& shown) const {
  d.cause = FailureCause::HostRamOomKiller;
  shown.push_back(&kill_lines_);
  d.explanation = "The kernel's OOM killer ended the launch: host RAM";
  if (!kills_.kills().empty()) {
    const OomKill& k = kills_.kills().back();
    d.explanation += k.cgroup ? " inside the container's memory cgroup (its limit, not the "
                                "machine's RAM) ran out; it killed "
                              : " ran out; it killed ";
    d.explanation += (k.process.empty() ? std::string("a process") : k.process) + " (pid " +
                     std::to_string(k.pid) + ")";
    if (k.anon_rss_bytes)
      d.explanation += " holding " + gib_bytes(*k.anon_rss_bytes) + " anonymous";
    if (k.shmem_rss_bytes && *k.shmem_rss_bytes > 0) {
      d.explanation += " and " + gib_bytes(*k.shmem_rss_bytes) + " shared (pinned)";
    }
  } else {
    d.explanation += " ran out and a process was killed";
  }
  d.explanation +=
      ". vLLM's host needs are per-process baselines, loader staging, pinned buffers, CPU "
      "offload and KV offload: raise the memory limit or lower --cpu-offload-gb / "
      "--kv-offloading-size; the plan's host breakdown shows what the launch needs.";
  d.advice = {lower(knob::kCpuOffloadGb), lower(knob::kKvOffloadingSize)};
}

// A failure that is not memory's: its first error line is the explanation and the evidence.
void explain_not_memory(const VllmLogFigures& f, Diagnosis& d) {
  d.cause = FailureCause::NotMemory;
  d.explanation = "The launch failed, but the log shows no memory failure";
  if (!f.error_lines.empty()) d.explanation += ": " + text::printable(f.error_lines.front());
  d.explanation += ".";
  Evidence errors;
  for (const std::string& e : f.error_lines) errors.add(e);
  for (const std::string& line : errors.lines()) d.evidence.push_back(line);
}

// The evidence the cause rests on, de-duplicated, kMaxEvidence lines at most.
void add_evidence(const std::vector<const Evidence*>& shown, Diagnosis& d) {
  for (const Evidence* e : shown) {
    for (const std::string& line : e->lines()) {
      if (d.evidence.size() >= kMaxEvidence) break;
      if (std::find(d.evidence.begin(), d.evidence.end(), line) == d.evidence.end()) {
        d.evidence.push_back(line);
      }
    }
  }
  if (d.evidence.size() > kMaxEvidence) d.evidence.resize(kMaxEvidence);
}

Diagnosis Scanner::finish(VllmLogFigures figures) {
  Diagnosis d;
  Shown shown;
  const VllmLogFigures& f = figures;
  const bool negative_kv = f.kv_cache_gib && *f.kv_cache_gib < 0;
  if (f.outcome == "startup_free_memory" || !startup_free_.lines().empty()) {
    explain_startup_free(f, d, shown);
  } else if (f.outcome == "insufficient_kv_for_max_model_len" || !insufficient_.lines().empty()) {
    explain_max_model_len(f, d, shown);
  } else if (f.outcome == "state_blocks_below_max_num_seqs" || !state_blocks_.lines().empty()) {
    explain_state_blocks(f, d, shown);
  } else if (negative_kv || !no_kv_.lines().empty()) {
    explain_kv_budget(f, d, shown);
  } else if (oom_) {
    explain_cuda_oom(f, d, shown);
  } else if (kills_.killed()) {
    explain_oom_kill(d, shown);
  } else if (!f.error_lines.empty() || traceback_ || f.outcome == "oom_at_load") {
    explain_not_memory(f, d);
  } else {
    d.cause = FailureCause::Unknown;
    d.explanation = f.outcome == "started"
                        ? "The log shows a launch that started and no failure after it."
                        : "No vLLM failure, CUDA out-of-memory message or OOM-killer line was "
                          "found in the text.";
  }
  add_evidence(shown, d);
  d.oom_other_processes_bytes = oom_others_bytes_;
  d.oom_kills = kills_.take_kills();
  d.figures = std::move(figures);
  return d;
}

template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = start;
    while (end < text.size() && text[end] != '\n' && text[end] != '\r') ++end;
    std::string_view line = text.substr(start, end - start);
    if (line.size() > kMaxDiagnoseLineBytes) line = line.substr(0, kMaxDiagnoseLineBytes);
    if (!line.empty()) fn(line);
    start = end + 1;
  }
}

}  // namespace

bool OomKillReader::log_line(std::string_view line) {
  const bool notice = trim(line) == kernel::kShellKilled || contains(line, kernel::kRayOomKiller) ||
                      contains(line, kernel::kKubernetesOomKilled) ||
                      contains(line, kernel::kRayLowMemory);
  notice_ = notice_ || notice;
  // journalctl output pasted into the log
  return kernel_line(line) || notice;
}

bool OomKillReader::kernel_line(std::string_view line) {
  if (contains(line, kernel::kMemoryCgroupOom) || contains(line, kernel::kConstraintMemcg)) {
    memcg_pending_ = true;
  }
  const bool report_line =
      contains(line, kernel::kInvokedOomKiller) || contains(line, kernel::kOomKill);
  const std::size_t at = after(line, kernel::kKilledProcess);
  if (at == npos) {
    // A report wrapped over lines: "file-rss:..., shmem-rss:..." continue the last kill.
    if (open_ && !kills_.empty()) {
      OomKill& last = kills_.back();
      if (!last.anon_rss_bytes) last.anon_rss_bytes = bytes_after(line, kernel::kAnonRss);
      if (!last.file_rss_bytes) last.file_rss_bytes = bytes_after(line, kernel::kFileRss);
      if (!last.shmem_rss_bytes) last.shmem_rss_bytes = bytes_after(line, kernel::kShmemRss);
      open_ = contains(line, kernel::kAnyRss);
      return report_line || open_;
    }
    return report_line;
  }
  if (kills_.size() >= 64) return report_line;
  OomKill kill;
  const auto pid_number = text::read_number(line, at);
  const auto pid = pid_number ? text::to_count(*pid_number) : std::nullopt;
  if (!pid) return report_line;
  kill.pid = *pid;
  // "(ray::IDLE)": the kernel's name for the process, 15 characters at most.
  const std::size_t name = after(line, "(", pid_number->end);
  const std::size_t close = name == npos ? npos : line.find(')', name);
  if (close != npos && name - pid_number->end <= 3 && close - name <= 63) {
    kill.process = text::printable(line.substr(name, close - name));
  }
  kill.cgroup = memcg_pending_ || contains(line, kernel::kMemoryCgroupOom);
  memcg_pending_ = false;
  kill.anon_rss_bytes = bytes_after(line, kernel::kAnonRss);
  kill.file_rss_bytes = bytes_after(line, kernel::kFileRss);
  kill.shmem_rss_bytes = bytes_after(line, kernel::kShmemRss);
  kills_.push_back(std::move(kill));
  open_ = true;
  return true;
}

constexpr std::array kAdviceActionNames{
    std::pair{AdviceAction::Lower, "lower"},
    std::pair{AdviceAction::Raise, "raise"},
    std::pair{AdviceAction::Keep, "keep"},
};

const char* advice_action_name(AdviceAction action) noexcept {
  return name_in(kAdviceActionNames, action, "set");
}

constexpr std::array kCauseNames{
    std::pair{FailureCause::HostRamOomKiller, "host_ram_oom_killer"},
    std::pair{FailureCause::GpuMemoryUtilizationOvershoot, "gpu_memory_utilization_overshoot"},
    std::pair{FailureCause::WeightsDoNotFit, "weights_do_not_fit"},
    std::pair{FailureCause::KvBudgetExhausted, "kv_budget_exhausted"},
    std::pair{FailureCause::MaxModelLenExceedsKv, "max_model_len_exceeds_kv"},
    std::pair{FailureCause::StateBlocksBelowMaxNumSeqs, "state_blocks_below_max_num_seqs"},
    std::pair{FailureCause::ActivationPeakOom, "activation_peak_oom"},
    std::pair{FailureCause::CudagraphProfilingOom, "cudagraph_profiling_oom"},
    std::pair{FailureCause::CudagraphCaptureOom, "cudagraph_capture_oom"},
    std::pair{FailureCause::SamplerWarmupOom, "sampler_warmup_oom"},
    std::pair{FailureCause::RuntimeOom, "runtime_oom"},
    std::pair{FailureCause::NotMemory, "not_memory"},
};

const char* cause_name(FailureCause cause) noexcept {
  return name_in(kCauseNames, cause, "unknown");
}

Diagnosis diagnose_launch(std::string_view log_text, std::string_view kernel_text) {
  std::string log_storage, kernel_storage;
  const std::string_view log = bounded(log_text, log_storage);
  const std::string_view kernel = bounded(kernel_text, kernel_storage);
  Scanner scanner;
  for_each_line(log, [&](std::string_view line) { scanner.log_line(line); });
  for_each_line(kernel, [&](std::string_view line) { scanner.kernel_line(line); });
  return scanner.finish(parse_vllm_log(log));
}

nlohmann::json to_json(const std::vector<OomKill>& kills) {
  nlohmann::json out = nlohmann::json::array();
  for (const OomKill& k : kills) {
    out.push_back({{"pid", k.pid},
                   {"process", k.process},
                   {"cgroup", k.cgroup},
                   {"anon_rss_bytes", optional_json(k.anon_rss_bytes)},
                   {"file_rss_bytes", optional_json(k.file_rss_bytes)},
                   {"shmem_rss_bytes", optional_json(k.shmem_rss_bytes)}});
  }
  return out;
}

namespace {

// The `vllm serve` flag of a knob the advice names (the knob table's; the planner-only knobs
// have none: their argument name as a flag).
std::string vllm_flag(std::string_view knob_name) {
  for (const KnobSpec& spec : knob_specs()) {
    if (spec.name == knob_name && !spec.flag.empty()) return std::string(spec.flag);
  }
  std::string flag = "--" + std::string(knob_name);
  std::replace(flag.begin() + 2, flag.end(), '_', '-');
  return flag;
}

}  // namespace

nlohmann::json to_json(const Diagnosis& d) {
  nlohmann::json j;
  j["engine"] = "vllm";
  j["cause"] = cause_name(d.cause);
  j["evidence"] = d.evidence;
  j["explanation"] = d.explanation;
  j["oom_phase"] = d.oom_phase.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.oom_phase);
  j["oom_other_processes_bytes"] = optional_json(d.oom_other_processes_bytes);
  j["oom_kills"] = to_json(d.oom_kills);
  nlohmann::json advice = nlohmann::json::array();
  for (const Advice& a : d.advice) {
    // No `why` of its own: the explanation says why, with the log's numbers.
    advice.push_back({{"knob", a.knob},
                      {"flag", vllm_flag(a.knob)},
                      {"action", advice_action_name(a.action)},
                      {"value", a.value},
                      {"why", nullptr}});
  }
  j["advice"] = std::move(advice);
  j["figures"] = to_json(d.figures);
  return j;
}

HostOomReading read_host_oom(const OomKill& kill, const HostBreakdown& planned,
                             std::int64_t workers) {
  HostOomReading r;
  r.planned_required_bytes = planned.required_bytes;
  r.killed_anon_bytes = kill.anon_rss_bytes.value_or(0);
  r.gap_bytes = r.killed_anon_bytes - r.planned_required_bytes;
  const std::int64_t checkpoint = planned.page_cache_bytes;
  if (checkpoint > 0)
    r.checkpoint_copies =
        static_cast<double>(r.killed_anon_bytes) / static_cast<double>(checkpoint);
  std::string& e = r.explanation;
  e = "The plan needs " + gib_bytes(r.planned_required_bytes) +
      " of host RAM on this node for the launch as logged (" +
      gib_bytes(planned.process_baseline_bytes) + " process baselines, " +
      gib_bytes(planned.loader_anonymous_bytes) + " loader staging, " +
      gib_bytes(planned.pinned_bytes) + " pinned, " + gib_bytes(planned.input_batch_bytes) +
      " input batch; the checkpoint's " + gib_bytes(checkpoint) +
      " of page cache is reclaimable and not counted).";
  if (!kill.anon_rss_bytes) {
    e += " The kernel's line gives no anonymous RSS to set against it.";
  } else if (r.gap_bytes > 0) {
    char copies[32];
    std::snprintf(copies, sizeof copies, "%.2f", r.checkpoint_copies);
    e += " The killed process alone held " + gib_bytes(r.killed_anon_bytes) + " anonymous, " +
         gib_bytes(r.gap_bytes) + " more than the whole plan";
    if (checkpoint > 0) e += std::string(", ") + copies + " x the checkpoint";
    e += ". What the plan does not count, and can explain it: a loader that reads whole tensors "
         "into anonymous memory instead of memory-mapping the safetensors (.bin / .pt weights, "
         "a filesystem whose pages are copied rather than mapped, a load format or quantization "
         "path that materialises the checkpoint, a dtype conversion on the host) holds up to "
         "one checkpoint per worker";
    const long copies_rounded = std::lround(r.checkpoint_copies);
    if (checkpoint > 0 && copies_rounded >= 1 && copies_rounded <= workers &&
        std::abs(r.checkpoint_copies - static_cast<double>(copies_rounded)) <= 0.1) {
      e += ": " + std::to_string(copies_rounded) + " x " + gib_bytes(checkpoint) + " = " +
           gib_bytes(copies_rounded * checkpoint) + " matches the " + std::to_string(workers) +
           "-worker launch";
    }
    e += "; or several workers' memory charged to this one process (workers in-process).";
  } else {
    e += " The killed process held " + gib_bytes(r.killed_anon_bytes) +
         " anonymous, within the plan: the memory limit is below what the launch needs, and "
         "other processes in the same container count against it too.";
  }
  e += " Lowering --gpu-memory-utilization cannot help: it sizes GPU memory after the weights "
       "load, and host RAM at load does not depend on it. Raise the container's memory limit "
       "above " +
       gib_bytes(std::max(r.killed_anon_bytes, r.planned_required_bytes)) +
       ", or let the loader memory-map the checkpoint (safetensors).";
  return r;
}

}  // namespace vramplan
