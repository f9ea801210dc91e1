// SGLang's failed-launch diagnosis: the parser's outcome names the cause (a kernel OOM kill in
// the same text comes first), and the advice's values come from the figures the log prints
// (docs/sglang.md derives each).
#include "vramplan/sglang_diagnose.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "enum_names.hpp"
#include "json_optional.hpp"
#include "vramplan/sglang_knobs.hpp"

namespace vramplan {
namespace {

// mem_fraction_static advice moves in hundredths, as SGLang's users write it.
constexpr double kHundredths = 100.0;
constexpr double kFractionStep = 1.0 / kHundredths;
// The largest fraction advised: SGLang leaves no slack at all at 1.
constexpr double kMaxFraction = 0.99;
// Margin above the smallest fraction that leaves the KV pool memory.
constexpr double kFractionMargin = 0.02;
// A graph-capture OOM without a baseline to scale by lowers the fraction by this much.
constexpr double kGraphStepWithoutBaseline = 0.02;
// GiB added to the failed allocation: the next graphs need more than the one that failed.
constexpr double kGraphAllocationMarginGib = 0.5;
// A CUDA OOM elsewhere widens the slack by this much.
constexpr double kOomFractionStep = 0.03;
// The smallest chunked prefill advised, and the chunk advised when the log prints none.
constexpr std::int64_t kMinChunkedPrefill = 512;
constexpr std::int64_t kChunkedPrefillWithoutLaunch = 4096;

// The nearest hundredth at or above / below `value` (a 1e-9 tolerance keeps 0.94 at 0.94).
double fraction_up(double value) { return std::ceil(value * kHundredths - 1e-9) / kHundredths; }
double fraction_down(double value) { return std::floor(value * kHundredths + 1e-9) / kHundredths; }

SglangAdvice advise(std::string_view knob, AdviceAction action, nlohmann::json value,
                    std::string why) {
  // The names are this file's constants, all in SGLang's knob table.
  return SglangAdvice{std::string(knob), std::string(sglang_knob_spec(knob).flag), action,
                      std::move(value), std::move(why)};
}

struct CauseText {
  std::string_view outcome;  // the parser's
  SglangFailureCause cause;
  std::string_view explanation;
};
constexpr CauseText kCauses[] = {
    {"weights_leave_no_memory", SglangFailureCause::WeightsLeaveNoMemory,
     "the weights leave no GPU memory for the KV pool at this --mem-fraction-static: free after "
     "the weights is below the slack B x (1 - f)"},
    {"not_enough_memory", SglangFailureCause::KvPoolTooSmall,
     "not enough memory for the KV pool: after the weights and the slack B x (1 - f), no token "
     "(or no Mamba state slot) fits"},
    {"hicache_refused", SglangFailureCause::HicacheRefused,
     "SGLang refused HiCache's host pool: each rank's pool is larger than its share of the "
     "host's available memory less a 10 GiB reserve"},
    {"oom_cuda_graph_capture", SglangFailureCause::OomCudaGraphCapture,
     "CUDA out of memory while capturing CUDA graphs: the slack B x (1 - f) left after the pools "
     "cannot hold the graphs"},
};

// The pool got no memory: the smallest f that leaves it some, then more GPUs or fp8 KV.
void advise_pool(const SglangLogFigures& f, std::vector<SglangAdvice>& advice) {
  const auto& free = f.avail_after_weights_gib;
  const auto& weights = f.weights_gib;
  if (free && weights && *free + *weights > 0) {
    // B taken as free + weights (docs/sglang.md): the pool needs f > 1 - free / B.
    const double minimum = 1.0 - *free / (*free + *weights);
    char why[160];
    std::snprintf(why, sizeof why,
                  "the smallest f that leaves the pool memory is %.4f (1 - free after the "
                  "weights / baseline); the slack shrinks with it",
                  minimum);
    advice.push_back(advise("mem_fraction_static", AdviceAction::Raise,
                            std::min(kMaxFraction, fraction_up(minimum + kFractionMargin)), why));
  } else {
    advice.push_back(
        advise("mem_fraction_static", AdviceAction::Raise, nullptr, "the log prints no weights"));
  }
  const int tp = f.tp_size && *f.tp_size != 0 ? *f.tp_size : 1;
  advice.push_back(advise("tp_size", AdviceAction::Raise, static_cast<std::int64_t>(tp) * 2,
                          "halves the weights per rank"));
  advice.push_back(
      advise("kv_cache_dtype", AdviceAction::Set, "fp8_e4m3", "halves the bytes per KV token"));
}

// The graphs did not fit the slack: widen it by the failed allocation's share of the baseline.
void advise_graph_capture(const SglangLogFigures& f, std::vector<SglangAdvice>& advice) {
  if (f.mem_fraction_static) {
    const double tried = f.oom_tried_gib.value_or(0.0);
    const double base = f.load_begin_avail_gib.value_or(0.0);
    const double step =
        base != 0.0 ? (tried + kGraphAllocationMarginGib) / base : kGraphStepWithoutBaseline;
    advice.push_back(advise("mem_fraction_static", AdviceAction::Lower,
                            fraction_down(*f.mem_fraction_static - std::max(step, kFractionStep)),
                            "a larger slack B x (1 - f) for the graphs"));
  }
  const int bs = f.cuda_graph_max_bs.value_or(0);
  advice.push_back(advise("cuda_graph_max_bs", AdviceAction::Lower,
                          bs != 0 ? nlohmann::json(std::max(1, bs / 2)) : nlohmann::json(nullptr),
                          "fewer and smaller graphs"));
  advice.push_back(
      advise("disable_cuda_graph", AdviceAction::Set, true, "no graphs at all (slower)"));
}

// A CUDA OOM outside the sizing: after the graphs it is the first prefill's activations.
void explain_oom(const SglangLogFigures& f, SglangDiagnosis& d) {
  const bool graphs_done = f.decode_graph_gib || f.avail_after_graphs_gib;
  d.cause = graphs_done ? SglangFailureCause::OomFirstPrefill : SglangFailureCause::Oom;
  d.explanation = graphs_done
                      ? "CUDA out of memory after the graphs were captured: the first (chunked) "
                        "prefill's activations do not fit in what the slack has left"
                      : "CUDA out of memory outside the pool sizing and the graph capture";
  const std::int64_t chunk = f.chunked_prefill_size.value_or(0);
  d.advice.push_back(
      advise("chunked_prefill_size", AdviceAction::Lower,
             chunk > 0 ? std::max(kMinChunkedPrefill, chunk / 2) : kChunkedPrefillWithoutLaunch,
             "smaller prefill activations"));
  if (f.mem_fraction_static) {
    d.advice.push_back(advise("mem_fraction_static", AdviceAction::Lower,
                              fraction_down(*f.mem_fraction_static - kOomFractionStep),
                              "a larger slack"));
  }
}

// The kernel's kill reports and notices in the log, over the text the parser reads.
OomKillReader read_kills(std::string_view text) {
  OomKillReader reader;
  text = text.substr(0, static_cast<std::size_t>(kSglangLogMaxBytes));
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = start;
    while (end < text.size() && text[end] != '\n' && text[end] != '\r') ++end;
    const std::string_view line = text.substr(start, std::min(end - start, kSglangLogMaxLineBytes));
    if (!line.empty()) reader.log_line(line);
    start = end + 1;
  }
  return reader;
}

}  // namespace

constexpr std::array kSglangCauseNames{
    std::pair{SglangFailureCause::HostOom, "host_oom"},
    std::pair{SglangFailureCause::WeightsLeaveNoMemory, "weights_leave_no_memory"},
    std::pair{SglangFailureCause::KvPoolTooSmall, "kv_pool_too_small"},
    std::pair{SglangFailureCause::HicacheRefused, "hicache_refused"},
    std::pair{SglangFailureCause::OomCudaGraphCapture, "oom_cuda_graph_capture"},
    std::pair{SglangFailureCause::OomFirstPrefill, "oom_first_prefill"},
    std::pair{SglangFailureCause::Oom, "oom"},
    std::pair{SglangFailureCause::Started, "started"},
};

const char* sglang_cause_name(SglangFailureCause cause) noexcept {
  return name_in(kSglangCauseNames, cause, "unknown");
}

SglangDiagnosis diagnose_sglang_launch(std::string_view log_text) {
  SglangDiagnosis d;
  d.figures = parse_sglang_log(log_text);
  const SglangLogFigures& f = d.figures;
  OomKillReader kills = read_kills(log_text);
  const bool host_oom = kills.killed();
  d.oom_kills = kills.take_kills();
  const auto known = std::find_if(std::begin(kCauses), std::end(kCauses),
                                  [&](const CauseText& c) { return c.outcome == f.outcome; });
  if (host_oom) {
    d.cause = SglangFailureCause::HostOom;
    d.explanation =
        "the kernel killed the process for host RAM (loading weights through host memory)";
    d.advice.push_back(
        advise("tp_size", AdviceAction::Keep, optional_json(f.tp_size),
               "host RAM is not a GPU knob: add host RAM or swap, or run fewer ranks per node"));
  } else if (known != std::end(kCauses)) {
    d.cause = known->cause;
    d.explanation = known->explanation;
    if (d.cause == SglangFailureCause::HicacheRefused) {
      d.advice.push_back(
          advise("hicache_ratio", AdviceAction::Lower, nullptr, "host tokens per device KV token"));
      d.advice.push_back(advise("hicache_size", AdviceAction::Set, nullptr,
                                "a fixed host pool per rank, decimal GB"));
    } else if (d.cause == SglangFailureCause::OomCudaGraphCapture) {
      advise_graph_capture(f, d.advice);
    } else {
      advise_pool(f, d.advice);
    }
  } else if (f.outcome == "oom") {
    explain_oom(f, d);
  } else if (f.outcome == "started") {
    d.cause = SglangFailureCause::Started;
    d.explanation = "the launch started: no failure in this log";
  } else {
    d.cause = SglangFailureCause::Unknown;
    d.explanation = "no SGLang failure this parser knows was found";
  }
  return d;
}

nlohmann::json to_json(const SglangDiagnosis& d) {
  nlohmann::json advice = nlohmann::json::array();
  for (const SglangAdvice& a : d.advice) {
    advice.push_back({{"knob", a.knob},
                      {"flag", a.flag},
                      {"action", advice_action_name(a.action)},
                      {"value", a.value},
                      {"why", a.why}});
  }
  nlohmann::json j;
  j["engine"] = "sglang";
  j["cause"] = sglang_cause_name(d.cause);
  j["explanation"] = d.explanation;
  j["advice"] = std::move(advice);
  j["evidence"] = d.figures.error_lines;
  j["oom_kills"] = to_json(d.oom_kills);
  j["figures"] = to_json(d.figures);
  return j;
}

}  // namespace vramplan
