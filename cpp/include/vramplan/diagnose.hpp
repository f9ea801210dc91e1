// Names the one cause of a failed vLLM launch from what the user has: the vLLM log (any era,
// read by parse_vllm_log), the CUDA out-of-memory message and traceback inside it, and
// optionally the kernel's OOM-killer lines (`dmesg` / `journalctl -k`).
//
// The input is untrusted text. diagnose_launch never throws for bad input (only
// std::bad_alloc can escape), reads at most kMaxDiagnoseInputBytes of each text (the head
// and the tail, where launch settings and the failure are), examines at most
// kMaxDiagnoseLineBytes of each line, and runs in time linear in what it reads, without
// regular expressions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/log_parser.hpp"

namespace vramplan {

constexpr std::size_t kMaxDiagnoseInputBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxDiagnoseLineBytes = std::size_t{64} * 1024;  // as parse_vllm_log

// The fixed vocabulary; cause_name gives the JSON spelling (e.g. "sampler_warmup_oom").
enum class FailureCause : std::uint8_t {
  HostRamOomKiller,               // the kernel killed a process for host RAM
  GpuMemoryUtilizationOvershoot,  // other tenants / free memory below the request
  WeightsDoNotFit,                // CUDA OOM while loading weights
  KvBudgetExhausted,              // no memory left for KV blocks after the profile
  MaxModelLenExceedsKv,           // one max_model_len request does not fit the KV cache
  StateBlocksBelowMaxNumSeqs,     // max_num_seqs above the Mamba state blocks (0.20+)
  ActivationPeakOom,              // CUDA OOM in the profile run (max_num_batched_tokens)
  CudagraphProfilingOom,          // CUDA OOM in profile_cudagraph_memory (minimal KV cache)
  CudagraphCaptureOom,            // CUDA OOM capturing graphs after the KV cache
  SamplerWarmupOom,               // CUDA OOM warming up the sampler after the KV cache
  RuntimeOom,                     // CUDA OOM after startup (bursts, fragmentation)
  NotMemory,                      // the launch failed for a reason other than memory
  Unknown,                        // no failure found in the text
};
const char* cause_name(FailureCause cause) noexcept;

// One OOM-killer report: "Killed process 1703792 (ray::IDLE) total-vm:68545920kB,
// anon-rss:37760kB, file-rss:77744kB, shmem-rss:0kB".
struct OomKill {
  std::int64_t pid = 0;
  std::string process;  // as the kernel names it (15 characters at most)
  bool cgroup = false;  // "Memory cgroup out of memory": the container's limit, not the host
  std::optional<std::int64_t> anon_rss_bytes;
  std::optional<std::int64_t> file_rss_bytes;
  std::optional<std::int64_t> shmem_rss_bytes;
};

// Reads the kernel's OOM-killer reports and the kill notices around a server (the shell's
// "Killed", Ray's and Kubernetes' OOM messages) line by line. Every engine's diagnosis shares
// it, so each OOM-killer phrase is read in one place (runtime_vocabulary.hpp).
class OomKillReader {
 public:
  // A line of a server's log: a kill notice, or kernel lines pasted into the log. True when
  // the line is evidence of a kill.
  bool log_line(std::string_view line);
  // A dmesg / journalctl -k line. True when it is part of a kill report.
  bool kernel_line(std::string_view line);
  // A process was killed: a report naming its pid, or a notice.
  bool killed() const noexcept { return !kills_.empty() || notice_; }
  // The reports with a pid, in order (at most 64).
  const std::vector<OomKill>& kills() const noexcept { return kills_; }
  std::vector<OomKill> take_kills() { return std::move(kills_); }

 private:
  bool notice_ = false;  // "Killed", Ray's OOM-killer message, OOMKilled
  bool memcg_pending_ = false;
  bool open_ = false;  // the last kill report may continue on the next line
  std::vector<OomKill> kills_;
};

// vLLM's argument names the advice uses (the CLI spells them --max-model-len, LLM(...) takes
// them as they are).
namespace knob {
inline constexpr std::string_view kGpuMemoryUtilization = "gpu_memory_utilization";
inline constexpr std::string_view kMaxModelLen = "max_model_len";
inline constexpr std::string_view kMaxNumSeqs = "max_num_seqs";
inline constexpr std::string_view kMaxNumBatchedTokens = "max_num_batched_tokens";
inline constexpr std::string_view kKvCacheDtype = "kv_cache_dtype";
inline constexpr std::string_view kEnforceEager = "enforce_eager";
inline constexpr std::string_view kTensorParallelSize = "tensor_parallel_size";
inline constexpr std::string_view kPipelineParallelSize = "pipeline_parallel_size";
inline constexpr std::string_view kCpuOffloadGb = "cpu_offload_gb";
inline constexpr std::string_view kKvOffloadingSize = "kv_offloading_size";
}  // namespace knob

// Keep: the knob is not the fix and its value stays (the explanation says what is).
enum class AdviceAction : std::uint8_t { Lower, Raise, Set, Keep };
const char* advice_action_name(AdviceAction action) noexcept;  // "lower", "raise", "set", "keep"

// One change the explanation advises, as data: code reads this, never the explanation's words.
struct Advice {
  std::string knob;  // vLLM's argument name
  AdviceAction action = AdviceAction::Set;
  // Set: the value to give. Lower: the largest value the log says fits (vLLM's own estimate),
  // or null when it names none. Raise: null.
  nlohmann::json value;
};

struct Diagnosis {
  FailureCause cause = FailureCause::Unknown;
  // The lines the cause rests on: cleaned (no ANSI codes, process prefix or log header),
  // de-duplicated, at most 12, each cut at 400 bytes.
  std::vector<std::string> evidence;
  std::string explanation;     // why this cause, with the numbers the text gave
  std::vector<Advice> advice;  // the knobs the explanation advises changing, in its order

  // Where in the startup the CUDA OOM struck, from the traceback frames or, without a
  // traceback, from the last startup phase the log reached ("" when there was no CUDA OOM).
  std::string oom_phase;
  // Bytes other processes held on the GPU at the OOM ("Process N has X GiB memory in use").
  std::optional<std::int64_t> oom_other_processes_bytes;
  std::vector<OomKill> oom_kills;  // from the kernel lines, in order
  VllmLogFigures figures;          // the log parser's reading of the same log
};

// `log_text`: a vLLM log or any part of it (a pasted traceback, one OOM line); `kernel_text`:
// a dmesg / journalctl -k excerpt, or empty.
Diagnosis diagnose_launch(std::string_view log_text, std::string_view kernel_text);

// A host OOM kill set against the plan's host need for the same launch: what the plan says
// the node needs, what the killed process held, and what can explain a difference.
struct HostOomReading {
  std::int64_t planned_required_bytes = 0;  // the plan's host need per node (anonymous + pinned)
  std::int64_t killed_anon_bytes = 0;       // the killed process's anonymous RSS
  std::int64_t gap_bytes = 0;               // killed_anon - planned (negative: under the plan)
  double checkpoint_copies = 0.0;           // killed_anon / checkpoint bytes
  std::string explanation;                  // the comparison and its candidate causes, in words
};

// `planned`: the plan's host breakdown for the launch as logged; `workers`: GPU worker processes
// on the node (TP x PP x DP). Both the anonymous RSS and the plan count bytes.
HostOomReading read_host_oom(const OomKill& kill, const HostBreakdown& planned,
                             std::int64_t workers);

// Keys: engine ("vllm"), cause, evidence, explanation, advice ([{knob, flag, action, value,
// why}]: why is null, the explanation says it), oom_phase, oom_other_processes_bytes, oom_kills,
// figures (the log parser's JSON).
nlohmann::json to_json(const Diagnosis& diagnosis);
// Each kill as {pid, process, cgroup, anon_rss_bytes, file_rss_bytes, shmem_rss_bytes} (every
// engine's diagnosis reports them so).
nlohmann::json to_json(const std::vector<OomKill>& kills);

}  // namespace vramplan
