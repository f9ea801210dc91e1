// The cause classifier: one pass over the lines of the log (and of the kernel excerpt), each
// matched against fixed phrases with string_view::find, then one decision in a fixed order of
// precedence (the engine's own verdicts first, then a CUDA OOM placed by its traceback or by
// the startup phase it interrupted, then the kernel's OOM killer, then any other failure).
#include "vramplan/diagnose.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace vramplan {
namespace {

constexpr std::size_t npos = std::string_view::npos;
constexpr std::size_t kHeadBytes = std::size_t{4} << 20;  // launch settings live at the start
constexpr std::size_t kMaxEvidence = 12;
constexpr std::size_t kMaxEvidenceChars = 400;
constexpr std::size_t kMaxPerCategory = 6;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

bool contains(std::string_view s, std::string_view p) { return s.find(p) != npos; }
bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Head and tail of an over-long text, joined at a line break.
std::string_view bounded(std::string_view text, std::string& storage) {
  if (text.size() <= kMaxDiagnoseInputBytes) return text;
  storage.reserve(kMaxDiagnoseInputBytes + 1);
  storage.append(text.substr(0, kHeadBytes));
  storage.push_back('\n');
  storage.append(text.substr(text.size() - (kMaxDiagnoseInputBytes - kHeadBytes)));
  return storage;
}

// Valid UTF-8 is kept; control characters, ANSI escape sequences and invalid bytes are not.
std::string printable(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c == 0x1b) {  // ESC [ params final
      std::size_t j = i + 1;
      if (j < in.size() && in[j] == '[') {
        ++j;
        while (j < in.size() && j - i < 34 && static_cast<unsigned char>(in[j]) >= 0x20 &&
               static_cast<unsigned char>(in[j]) <= 0x3f) {
          ++j;
        }
      }
      i = std::min(in.size(), j + 1);
      continue;
    }
    if (c == '^' && i + 2 < in.size() && in[i + 1] == '[' && in[i + 2] == '[') {
      std::size_t j = i + 3;
      while (j < in.size() && j - i < 34 && (is_digit(in[j]) || in[j] == ';')) ++j;
      if (j < in.size() && in[j] == 'm') {
        i = j + 1;
        continue;
      }
    }
    if (c < 0x80) {
      out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
      ++i;
      continue;
    }
    // Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
    const std::size_t len = c < 0xc2 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 0;
    bool ok = len != 0 && i + len <= in.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(in[i + k]);
      unsigned char low = 0x80, high = 0xbf;
      if (k == 1 && c == 0xe0) low = 0xa0;
      if (k == 1 && c == 0xed) high = 0x9f;
      if (k == 1 && c == 0xf0) low = 0x90;
      if (k == 1 && c == 0xf4) high = 0x8f;
      ok = b >= low && b <= high;
    }
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

// "2026-04-19 11:40:35.639 | " (docker compose), "(EngineCore pid=7) ", "[rank0]: ",
// "ERROR 04-19 09:40:35 [core.py:1132] ": removed so evidence reads as the message.
std::string_view strip_decorations(std::string_view s) {
  s = trim(s);
  const std::size_t bar = s.find(" | ");
  if (bar != npos && bar < 40 && bar >= 10 && is_digit(s[0])) s = trim(s.substr(bar + 3));
  for (int round = 0; round < 4; ++round) {
    if (starts_with(s, "(")) {
      const std::size_t close = s.find(')');
      if (close == npos || close > 120 || !contains(s.substr(0, close), "pid=")) break;
      s = trim(s.substr(close + 1));
    } else if (starts_with(s, "[rank")) {
      const std::size_t close = s.find("]:");
      if (close == npos || close > 16) break;
      s = trim(s.substr(close + 2));
    } else {
      break;
    }
  }
  static constexpr std::string_view kLevels[] = {"DEBUG ", "INFO ",     "WARNING ",
                                                 "ERROR ", "CRITICAL ", "WARN "};
  for (std::string_view level : kLevels) {
    if (!starts_with(s, level)) continue;
    const std::size_t close = s.find("] ");
    if (close != npos && close < 240) s = trim(s.substr(close + 2));
    break;
  }
  return s;
}

struct Number {
  double value = 0.0;
  std::size_t end = 0;
};

std::optional<Number> number_at(std::string_view s, std::size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  std::string buf;
  std::size_t i = pos;
  bool dot = false;
  while (i < s.size() && buf.size() < 32) {
    if (is_digit(s[i])) {
      buf.push_back(s[i]);
    } else if (s[i] == ',' && !buf.empty() && !dot && i + 1 < s.size() && is_digit(s[i + 1])) {
      // thousands separator
    } else if (s[i] == '.' && !dot && !buf.empty() && i + 1 < s.size() && is_digit(s[i + 1])) {
      buf.push_back('.');
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (buf.empty() || buf.size() >= 32) return std::nullopt;
  Number n;
  if (std::from_chars(buf.data(), buf.data() + buf.size(), n.value).ec != std::errc{}) {
    return std::nullopt;
  }
  n.end = i;
  return n;
}

// "1.02 GiB", "786.00 MiB", "448.00 KiB", "0 bytes", "37760kB" at s[pos], in bytes.
std::optional<std::int64_t> bytes_at(std::string_view s, std::size_t pos) {
  const auto n = number_at(s, pos);
  if (!n || n->value > 1e18) return std::nullopt;
  std::size_t u = n->end;
  while (u < s.size() && is_space(s[u])) ++u;
  struct Unit {
    std::string_view name;
    double bytes;
  };
  static constexpr Unit kUnits[] = {{"GiB", 1073741824.0}, {"GB", 1073741824.0}, {"MiB", 1048576.0},
                                    {"MB", 1048576.0},     {"KiB", 1024.0},      {"kB", 1024.0},
                                    {"KB", 1024.0},        {"bytes", 1.0}};
  for (const Unit& unit : kUnits) {
    if (starts_with(s.substr(u), unit.name)) {
      return static_cast<std::int64_t>(std::llround(n->value * unit.bytes));
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> bytes_after(std::string_view s, std::string_view key) {
  const std::size_t at = s.find(key);
  if (at == npos) return std::nullopt;
  return bytes_at(s, at + key.size());
}

std::optional<std::int64_t> int_after(std::string_view s, std::string_view key) {
  const std::size_t at = s.find(key);
  if (at == npos) return std::nullopt;
  const auto n = number_at(s, at + key.size());
  if (!n || n->value > 9e18) return std::nullopt;
  return static_cast<std::int64_t>(n->value);
}

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
  std::string_view phrase;
  unsigned frame;
};
constexpr FrameMarker kFrameMarkers[] = {
    {"profile_cudagraph_memory", kFrameCudagraphProfiling},
    {"_init_minimal_kv_cache_for_profiling", kFrameCudagraphProfiling},
    {"capture_model", kFrameCapture},
    {"capture_end", kFrameCapture},
    {"_capture_cudagraphs", kFrameCapture},
    {"torch/cuda/graphs.py", kFrameCapture},
    {"_dummy_sampler_run", kFrameSampler},
    {"warming up sampler", kFrameSampler},
    {"in profile_run", kFrameProfileRun},
    {"determine_available_memory", kFrameProfileRun},
    {"determine_num_available_blocks", kFrameProfileRun},
    {"compile_or_warm_up_model", kFrameWarmUp},
    {"in load_model", kFrameLoad},
    {"load_weights", kFrameLoad},
    {"create_weights", kFrameLoad},
    {"_initialize_model", kFrameLoad},
    {"Failed to create unquantized linear weights", kFrameLoad},
    {"_allocate_kv_cache", kFrameKvAlloc},
    {"initialize_kv_cache", kFrameKvAlloc},
    {"in initialize_cache", kFrameKvAlloc},
    {"in execute_model", kFrameRuntime},
    {"in sample_tokens", kFrameRuntime},
    {"compute_logprobs", kFrameRuntime},
    {"in engine_step", kFrameRuntime},
    {"in step_with_batch_queue", kFrameRuntime},
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

std::string phase_from_log(Phase phase) {
  switch (phase) {
    case Phase::Loading:
      return "loading";
    case Phase::Profiling:
      return "profile_run";
    case Phase::CudagraphProfiling:
      return "cudagraph_profiling";
    case Phase::KvAllocated:
      return "kv_cache_allocation";
    case Phase::Capturing:
      return "cudagraph_capture";
    case Phase::Captured:
      return "sampler_warmup";
    case Phase::Running:
      return "runtime";
    case Phase::None:
      break;
  }
  return "";
}

bool is_oom_line(std::string_view line) {
  return contains(line, "CUDA out of memory") || contains(line, "OutOfMemoryError") ||
         contains(line, "CUDA error: out of memory") ||
         contains(line, "cudaErrorMemoryAllocation") ||
         contains(line, "out of memory occurred when warming up sampler");
}

// Lines kept per kind of evidence, de-duplicated, in order of appearance.
class Evidence {
 public:
  void add(std::string_view raw) {
    if (lines_.size() >= kMaxPerCategory) return;
    std::string text = printable(strip_decorations(raw));
    if (text.size() > kMaxEvidenceChars) {
      text.resize(kMaxEvidenceChars);
      // Drop a multi-byte character the cut split.
      while (!text.empty() && static_cast<unsigned char>(text.back()) >= 0x80) text.pop_back();
    }
    text = std::string(trim(text));
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
  void kernel_line(std::string_view line);
  Diagnosis finish(VllmLogFigures figures);

 private:
  void track_phase(std::string_view line);
  void oom_line(std::string_view line);

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
  bool kill_hint_ = false;  // "Killed", Ray's OOM-killer message, OOMKilled
  bool memcg_pending_ = false;
  bool kill_open_ = false;  // the last kill report may continue on the next line
  std::vector<OomKill> kills_;

  Evidence oom_lines_, decisive_frames_, startup_free_, insufficient_, no_kv_, kill_lines_,
      profiling_setup_, phase_lines_;
};

void Scanner::track_phase(std::string_view line) {
  struct Marker {
    std::string_view phrase;
    Phase phase;
  };
  static constexpr Marker kMarkers[] = {
      {"Starting to load model", Phase::Loading},
      {"Loading safetensors checkpoint shards", Phase::Loading},
      {"Loading weights on", Phase::Loading},
      {"Model loading took", Phase::Profiling},
      {"Loading model weights took", Phase::Profiling},
      {"model weights take", Phase::Profiling},
      {"Profiling CUDA graph memory", Phase::CudagraphProfiling},
      {"with num_gpu_blocks_override=", Phase::CudagraphProfiling},
      {"Available KV cache memory", Phase::KvAllocated},
      {"GPU KV cache size", Phase::KvAllocated},
      {"# GPU blocks", Phase::KvAllocated},
      {"# cuda blocks", Phase::KvAllocated},
      {"# CUDA blocks", Phase::KvAllocated},
      {"the rest of the memory reserved for KV Cache", Phase::KvAllocated},
      {"Capturing CUDA graph", Phase::Capturing},
      {"Capturing cudagraphs", Phase::Capturing},
      {"Capturing the model for CUDA graphs", Phase::Capturing},
      {"Graph capturing finished", Phase::Captured},
      {"Application startup complete", Phase::Running},
      {"Starting vLLM API server", Phase::Running},
      {"Starting vLLM server on", Phase::Running},
      {"Avg prompt throughput", Phase::Running},
  };
  for (const Marker& m : kMarkers) {
    if (m.phase > phase_ && contains(line, m.phrase)) {
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
    oom_tried_bytes_ = bytes_after(line, "Tried to allocate ");
    if (oom_tried_bytes_ && contains(line, "this process has")) {
      // "Process 162519 has 20.28 GiB memory in use." names the other tenants when torch
      // also names this process ("this process has"); without it one of them is this one.
      std::int64_t others = 0;
      bool any = false;
      std::size_t at = 0;
      while ((at = line.find("Process ", at)) != npos) {
        const auto pid = number_at(line, at + 8);
        at += 8;
        if (!pid) continue;
        const std::size_t has = line.find(" has ", pid->end);
        if (has != pid->end) continue;
        if (const auto b = bytes_at(line, has + 5)) {
          others += *b;
          any = true;
        }
      }
      if (any) oom_others_bytes_ = others;
    }
  }
}

void Scanner::log_line(std::string_view line) {
  if (contains(line, "Traceback (most recent call last)")) {
    frames_ = 0;
    for (Evidence& e : frame_lines_) e.clear();
    traceback_ = true;
  }
  for (const FrameMarker& m : kFrameMarkers) {
    if (contains(line, m.phrase)) {
      frames_ |= m.frame;
      frame_lines_[frame_index(m.frame)].add(line);
    }
  }
  track_phase(line);
  if (contains(line, "with num_gpu_blocks_override=")) {
    profiling_kv_blocks_ = int_after(line, "with num_gpu_blocks_override=");
    profiling_setup_.add(line);
  }
  if (contains(line, "Setting attention block size to") ||
      contains(line, "Profiling CUDA graph memory")) {
    profiling_setup_.add(line);
  }
  if (is_oom_line(line)) oom_line(line);
  if (contains(line, "Request ") && contains(line, " failed")) failed_requests_.add(line);
  if (contains(line, "Free memory on device") && contains(line, "less than desired")) {
    startup_free_.add(line);
  }
  if (contains(line, " GiB KV cache is needed") ||
      contains(line, "is larger than the maximum number of tokens that can be stored in KV")) {
    insufficient_.add(line);
  }
  if (contains(line, "No available memory for the cache blocks") ||
      (contains(line, "Available KV cache memory: -"))) {
    no_kv_.add(line);
  }
  if (trim(line) == "Killed" || contains(line, "killed by SIGKILL by OOM killer") ||
      contains(line, "OOMKilled") || contains(line, "running low on memory")) {
    kill_hint_ = true;
    kill_lines_.add(line);
  }
  kernel_line(line);  // journalctl output pasted into the log
}

void Scanner::kernel_line(std::string_view line) {
  if (contains(line, "Memory cgroup out of memory") || contains(line, "CONSTRAINT_MEMCG")) {
    memcg_pending_ = true;
  }
  if (contains(line, "invoked oom-killer") || contains(line, "oom-kill:")) kill_lines_.add(line);
  const std::size_t at = line.find("Killed process ");
  if (at == npos) {
    // A report wrapped over lines: "file-rss:..., shmem-rss:..." continue the last kill.
    if (kill_open_ && !kills_.empty()) {
      OomKill& last = kills_.back();
      if (!last.anon_rss_bytes) last.anon_rss_bytes = bytes_after(line, "anon-rss:");
      if (!last.file_rss_bytes) last.file_rss_bytes = bytes_after(line, "file-rss:");
      if (!last.shmem_rss_bytes) last.shmem_rss_bytes = bytes_after(line, "shmem-rss:");
      kill_open_ = contains(line, "-rss:");
      if (kill_open_) kill_lines_.add(line);
    }
    return;
  }
  if (kills_.size() >= 64) return;
  OomKill kill;
  const auto pid = number_at(line, at + 15);
  if (!pid) return;
  kill.pid = static_cast<std::int64_t>(pid->value);
  const std::size_t open = line.find('(', pid->end);
  const std::size_t close = open == npos ? npos : line.find(')', open);
  if (open != npos && close != npos && open - pid->end <= 2 && close - open <= 64) {
    kill.process = printable(line.substr(open + 1, close - open - 1));
  }
  kill.cgroup = memcg_pending_ || contains(line, "Memory cgroup out of memory");
  memcg_pending_ = false;
  kill.anon_rss_bytes = bytes_after(line, "anon-rss:");
  kill.file_rss_bytes = bytes_after(line, "file-rss:");
  kill.shmem_rss_bytes = bytes_after(line, "shmem-rss:");
  kills_.push_back(std::move(kill));
  kill_open_ = true;
  kill_lines_.add(line);
}

Diagnosis Scanner::finish(VllmLogFigures figures) {
  Diagnosis d;
  std::vector<const Evidence*> shown;
  const VllmLogFigures& f = figures;
  const bool negative_kv = f.kv_cache_gib && *f.kv_cache_gib < 0;

  if (f.outcome == "startup_free_memory" || !startup_free_.lines().empty()) {
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
      d.explanation += " (" + gib(*f.startup_free_gib) + " free of " + gib(*f.gpu_total_gib) +
                       ", " + gib(*f.startup_desired_gib) + " requested): other processes hold " +
                       gib(*f.gpu_total_gib - *f.startup_free_gib) + " on that GPU";
    }
    d.explanation +=
        ". The utilization is a fraction of the whole device, not of what is free: lower "
        "--gpu-memory-utilization below free/total, or free the GPU.";
  } else if (f.outcome == "insufficient_kv_for_max_model_len" || !insufficient_.lines().empty()) {
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
  } else if (negative_kv || !no_kv_.lines().empty()) {
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
  } else if (oom_) {
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
    } else if (oom_phase_ == "kv_cache_allocation") {
      d.cause = FailureCause::GpuMemoryUtilizationOvershoot;
      shown.push_back(&phase_lines_);
      d.explanation = "CUDA ran out of memory allocating the KV cache the profile had sized" +
                      tried +
                      ": memory counted as free was gone by then (another process on the GPU, or "
                      "--gpu-memory-utilization too close to 1). Lower it, or free the GPU.";
      if (oom_others_bytes_) {
        d.explanation += " Other processes held " + gib_bytes(*oom_others_bytes_) + ".";
      }
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
  } else if (!kills_.empty() || kill_hint_) {
    d.cause = FailureCause::HostRamOomKiller;
    shown.push_back(&kill_lines_);
    d.explanation = "The kernel's OOM killer ended the launch: host RAM";
    if (!kills_.empty()) {
      const OomKill& k = kills_.back();
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
  } else if (!f.error_lines.empty() || traceback_ || f.outcome == "oom_at_load") {
    d.cause = FailureCause::NotMemory;
    d.explanation = "The launch failed, but the log shows no memory failure";
    if (!f.error_lines.empty()) d.explanation += ": " + printable(f.error_lines.front());
    d.explanation += ".";
    Evidence errors;
    for (const std::string& e : f.error_lines) errors.add(e);
    for (const std::string& line : errors.lines()) d.evidence.push_back(line);
  } else {
    d.cause = FailureCause::Unknown;
    d.explanation = f.outcome == "started"
                        ? "The log shows a launch that started and no failure after it."
                        : "No vLLM failure, CUDA out-of-memory message or OOM-killer line was "
                          "found in the text.";
  }

  for (const Evidence* e : shown) {
    for (const std::string& line : e->lines()) {
      if (d.evidence.size() >= kMaxEvidence) break;
      if (std::find(d.evidence.begin(), d.evidence.end(), line) == d.evidence.end()) {
        d.evidence.push_back(line);
      }
    }
  }
  if (d.evidence.size() > kMaxEvidence) d.evidence.resize(kMaxEvidence);
  d.oom_other_processes_bytes = oom_others_bytes_;
  d.oom_kills = std::move(kills_);
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

const char* cause_name(FailureCause cause) noexcept {
  switch (cause) {
    case FailureCause::HostRamOomKiller:
      return "host_ram_oom_killer";
    case FailureCause::GpuMemoryUtilizationOvershoot:
      return "gpu_memory_utilization_overshoot";
    case FailureCause::WeightsDoNotFit:
      return "weights_do_not_fit";
    case FailureCause::KvBudgetExhausted:
      return "kv_budget_exhausted";
    case FailureCause::MaxModelLenExceedsKv:
      return "max_model_len_exceeds_kv";
    case FailureCause::ActivationPeakOom:
      return "activation_peak_oom";
    case FailureCause::CudagraphProfilingOom:
      return "cudagraph_profiling_oom";
    case FailureCause::CudagraphCaptureOom:
      return "cudagraph_capture_oom";
    case FailureCause::SamplerWarmupOom:
      return "sampler_warmup_oom";
    case FailureCause::RuntimeOom:
      return "runtime_oom";
    case FailureCause::NotMemory:
      return "not_memory";
    case FailureCause::Unknown:
      break;
  }
  return "unknown";
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

nlohmann::json to_json(const Diagnosis& d) {
  nlohmann::json j;
  j["cause"] = cause_name(d.cause);
  j["evidence"] = d.evidence;
  j["explanation"] = d.explanation;
  j["oom_phase"] = d.oom_phase.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.oom_phase);
  j["oom_other_processes_bytes"] = d.oom_other_processes_bytes
                                       ? nlohmann::json(*d.oom_other_processes_bytes)
                                       : nlohmann::json(nullptr);
  auto optional_int = [](const std::optional<std::int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json kills = nlohmann::json::array();
  for (const OomKill& k : d.oom_kills) {
    kills.push_back({{"pid", k.pid},
                     {"process", k.process},
                     {"cgroup", k.cgroup},
                     {"anon_rss_bytes", optional_int(k.anon_rss_bytes)},
                     {"file_rss_bytes", optional_int(k.file_rss_bytes)},
                     {"shmem_rss_bytes", optional_int(k.shmem_rss_bytes)}});
  }
  j["oom_kills"] = std::move(kills);
  j["figures"] = to_json(d.figures);
  return j;
}

}  // namespace vramplan
