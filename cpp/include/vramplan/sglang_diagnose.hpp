// Names the cause of a failed SGLang launch from its startup log (read by parse_sglang_log) and
// advises the knobs to change, as data under SGLang's ServerArgs names and launch_server flags
// (sglang_knobs.hpp). Host OOM kills are read by the same OomKillReader as vLLM's diagnosis.
//
// The input is untrusted text: diagnose_sglang_launch never throws for bad input (only
// std::bad_alloc can escape) and is linear in the text, as parse_sglang_log is.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/diagnose.hpp"
#include "vramplan/sglang_log_parser.hpp"

namespace vramplan {

// The fixed vocabulary; sglang_cause_name gives the JSON spelling.
enum class SglangFailureCause : std::uint8_t {
  HostOom,               // the kernel killed the process for host RAM
  WeightsLeaveNoMemory,  // 0.5.x: free after the weights below the slack B x (1 - f)
  KvPoolTooSmall,        // 0.4.x "Not enough memory" / hybrid pools: no token or state fits
  HicacheRefused,        // HiCache's host pool larger than the host's share
  OomCudaGraphCapture,   // CUDA OOM capturing graphs in the slack
  OomFirstPrefill,       // CUDA OOM after the graphs: the first (chunked) prefill
  Oom,                   // CUDA OOM outside the pool sizing and the graph capture
  Started,               // the launch started
  Unknown,               // no failure this reader knows
};
const char* sglang_cause_name(SglangFailureCause cause) noexcept;

// One change the diagnosis advises, as data: code reads this, never the `why`.
struct SglangAdvice {
  std::string knob;  // SGLang's ServerArgs name
  std::string flag;  // its `python -m sglang.launch_server` flag (the knob table's)
  AdviceAction action = AdviceAction::Set;
  // The value to give (Raise / Lower: derived from the log's figures), or null where the log
  // prints none to derive it from or the knob takes a value the log cannot give.
  nlohmann::json value;
  std::string why;
};

struct SglangDiagnosis {
  SglangFailureCause cause = SglangFailureCause::Unknown;
  std::string explanation;           // what happened
  std::vector<SglangAdvice> advice;  // in the order to try
  std::vector<OomKill> oom_kills;    // the kernel's kill reports in the log, in order
  SglangLogFigures figures;          // the log parser's reading of the same log
};

// `log_text`: an SGLang startup log or any part of it; kernel lines pasted into it count.
SglangDiagnosis diagnose_sglang_launch(std::string_view log_text);

// Keys: engine ("sglang"), cause, explanation, advice ([{knob, flag, action, value, why}]),
// evidence (the parser's error lines), oom_kills, figures (the parser's JSON): the keys of
// vLLM's diagnosis that SGLang's log can fill.
nlohmann::json to_json(const SglangDiagnosis& diagnosis);

}  // namespace vramplan
