// libFuzzer target for the whole `plan` path from arbitrary knobs (structured fuzzing). The input
// bytes are read in order, one field after the other (an exhausted input reads as zeros):
//   u8 model, u8 GPU                 indices into the database (model_specs/), modulo its size
//   u8 mode + value                  GPU total: database | + i16 MiB | raw i64
//   u8 mode + value                  memory used by others: 0 | u16 MiB | raw i64
//   u8 mode + value                  host RAM: 0 (unknown) | u16 GiB | raw i64
//   u8                               GPUs on the node: 0 = TP x PP x DP, else as given
//   per knob of knob_specs(), in order: u8 selector + value
//     0 unset; 1 a typical value of the knob's type (its choices, a log-spread integer, a
//     fraction of its range, a version or quantization name); 2 raw i64; 3 raw double;
//     4 bool; 5 u8 length + text; 6 a special value (NaN, inf, -1, 0, 2^62, INT64_MIN ...)
//   u8                               drafter: 0 none, else a database model
//   u8 mode + value (x3)             target context, concurrency, safety margin
//   u8, u16                          utilization step (x 0.01) and context step for the checks
// A knob the registry refuses stays unset (set_knob must throw only vramplan::Error).
// Invariants (std::abort on violation):
//   - nothing but vramplan::Error escapes compiling, solving or rendering;
//   - a plan that fits meets its targets, and compute_breakdown at plan.config starts;
//   - every plan and every remedy marked fits carries a non-empty flag line;
//   - GPU memory: with 1 GiB more (not crossing the version's batch-default tier) a
//     breakdown that started still starts and a plan that fits still fits;
//   - utilization: a higher utilization never lowers any rank's KV cache bytes of a started
//     breakdown;
//   - context: a longer max_model_len never raises the maximum concurrency.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"

namespace {

using fuzz_support::nth_choice;
using fuzz_support::Reader;
using vramplan::Breakdown;
using vramplan::CompiledLaunch;
using vramplan::EngineConfig;
using vramplan::HardwareConfig;
using vramplan::KnobSpec;
using vramplan::KnobType;
using vramplan::KnobValue;
using vramplan::ModelSpec;
using vramplan::Outcome;
using vramplan::Plan;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "fuzz_plan: invariant violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) violated(what);
}

struct Database {
  vramplan::SpecDatabase db = vramplan::SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  std::vector<std::shared_ptr<const ModelSpec>> models;
  Database() {
    for (const ModelSpec& m : db.models()) models.push_back(std::make_shared<const ModelSpec>(m));
  }
};

const Database& database() {
  static const Database db;
  return db;
}

KnobValue typical_value(const KnobSpec& knob, Reader& in) {
  switch (knob.type) {
    case KnobType::Fraction: {
      const double r = in.take<std::uint16_t>() / 65535.0;
      return KnobValue{knob.minimum + (knob.maximum - knob.minimum) * r};
    }
    case KnobType::Integer: {
      if (!knob.choices.empty()) {
        return KnobValue{
            std::int64_t{std::stoll(nth_choice(knob.choices, in.take<std::uint8_t>()))}};
      }
      const unsigned shift = in.take<std::uint8_t>() % 32;
      const std::int64_t v = std::int64_t{in.take<std::uint32_t>()} >> shift;
      return KnobValue{std::max(static_cast<std::int64_t>(knob.minimum), v)};
    }
    case KnobType::Bytes:
      return KnobValue{std::int64_t{in.take<std::uint16_t>()} * 64 * kMiB};
    case KnobType::Boolean:
      return KnobValue{(in.take<std::uint8_t>() & 1) != 0};
    case KnobType::Text:
      break;
  }
  const std::uint8_t pick = in.take<std::uint8_t>();
  if (!knob.choices.empty()) return KnobValue{nth_choice(knob.choices, pick)};
  static const char* const kVersions[] = {"0.6.4.post1", "0.6.5",  "0.7.3",  "0.8.5",
                                          "0.9.1",       "0.10.1", "0.11.0", "0.17.0",
                                          "0.18.0",      "0.19.0", "0.21.0", "v1.0.2"};
  static const char* const kQuantizations[] = {
      "fp8", "bitsandbytes", "awq_marlin", "gptq_marlin", "compressed-tensors",
      "awq", "gptq",         "modelopt"};
  if (knob.name == "engine_version") return KnobValue{std::string(kVersions[pick % 12])};
  if (knob.name == "limit_mm_per_prompt") {
    // vLLM's JSON forms: a count per modality, or {"count": n}; the count from the input.
    const std::string count = std::to_string(in.take<std::uint8_t>() % 8);
    switch (pick % 4) {
      case 0:
        return KnobValue{"{\"image\": " + count + "}"};
      case 1:
        return KnobValue{"{\"image\": " + count + ", \"video\": 0}"};
      case 2:
        return KnobValue{"{\"image\": {\"count\": " + count + "}}"};
      default:
        return KnobValue{std::string("{\"image\": 0, \"video\": 0, \"audio\": 0}")};
    }
  }
  if (knob.name == "quantization") return KnobValue{std::string(kQuantizations[pick % 8])};
  return KnobValue{std::string("x")};
}

KnobValue special_value(Reader& in) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
  const std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
  switch (in.take<std::uint8_t>() % 14) {
    case 0:
      return KnobValue{std::nan("")};
    case 1:
      return KnobValue{inf};
    case 2:
      return KnobValue{-inf};
    case 3:
      return KnobValue{-0.5};
    case 4:
      return KnobValue{std::int64_t{-1}};
    case 5:
      return KnobValue{std::int64_t{0}};
    case 6:
      return KnobValue{std::int64_t{1} << 62};
    case 7:
      return KnobValue{i64_min};
    case 8:
      return KnobValue{i64_max};
    case 9:
      return KnobValue{9.2233720368547758e18};
    case 10:
      return KnobValue{1e-300};
    case 11:
      return KnobValue{std::int64_t{200} * kGiB};
    case 12:
      return KnobValue{std::string()};
    default:
      return KnobValue{std::int64_t{7}};
  }
}

// One knob from the input; nullopt leaves it unset.
std::optional<KnobValue> knob_value(const KnobSpec& knob, Reader& in) {
  switch (in.take<std::uint8_t>() % 8) {
    case 1:
      return typical_value(knob, in);
    case 2:
      return KnobValue{in.take<std::int64_t>()};
    case 3:
      return KnobValue{in.take<double>()};
    case 4:
      return KnobValue{(in.take<std::uint8_t>() & 1) != 0};
    case 5:
      return KnobValue{in.text()};
    case 6:
      return special_value(in);
    default:
      return std::nullopt;
  }
}

std::int64_t mode_value(Reader& in, std::int64_t zero_mode, std::int64_t unit) {
  switch (in.take<std::uint8_t>() % 3) {
    case 1:
      return std::int64_t{in.take<std::uint16_t>()} * unit;
    case 2:
      return in.take<std::int64_t>();
    default:
      return zero_mode;
  }
}

vramplan::LaunchKnobs knobs_at(const Plan& plan) { return vramplan::launch_knobs(plan.config); }

void check_plan(const ModelSpec& spec, const HardwareConfig& hardware, const Plan& plan,
                std::int64_t context, std::int64_t concurrency) {
  check(!vramplan::to_vllm_args(plan).empty(), "a plan has an empty flag line");
  for (const vramplan::Remedy& r : plan.remedies) {
    check(!r.fits || !r.flags.empty(), "a remedy marked fits has no flag line");
  }
  if (!plan.fits) return;
  check(plan.breakdown.outcome == Outcome::Started, "a fitting plan's breakdown did not start");
  check(context <= 0 || plan.max_model_len >= context, "a fitting plan misses its context");
  check(concurrency <= 0 || plan.concurrent_sequences >= concurrency,
        "a fitting plan misses its concurrency");
  const Breakdown replay = vramplan::compute_breakdown(spec, hardware, plan.config);
  check(replay.outcome == Outcome::Started, "a fitting plan's config does not start on replay");
  check(replay.num_blocks == plan.breakdown.num_blocks, "replay gives other KV blocks");
}

void run(Reader& in) {
  const Database& data = database();
  const auto& spec_ptr = data.models[in.take<std::uint8_t>() % data.models.size()];
  const ModelSpec& spec = *spec_ptr;
  HardwareConfig hardware;
  hardware.gpu = data.db.gpus()[in.take<std::uint8_t>() % data.db.gpus().size()];
  switch (in.take<std::uint8_t>() % 3) {
    case 1:
      hardware.gpu.total_memory_bytes += std::int64_t{in.take<std::int16_t>()} * kMiB;
      break;
    case 2:
      hardware.gpu.total_memory_bytes = in.take<std::int64_t>();
      break;
    default:
      break;
  }
  hardware.memory_used_by_others_bytes = mode_value(in, 0, kMiB);
  hardware.host_ram_bytes = mode_value(in, 0, kGiB);
  const std::int32_t num_gpus = in.take<std::uint8_t>();

  EngineConfig config;
  for (const KnobSpec& knob : vramplan::knob_specs()) {
    const std::optional<KnobValue> value = knob_value(knob, in);
    if (!value) continue;
    try {
      vramplan::set_knob(config, knob.name, *value);
    } catch (const vramplan::Error&) {
      // Refused with a named error: the knob stays unset.
    }
  }
  if (const std::uint8_t drafter = in.take<std::uint8_t>(); drafter != 0) {
    config.draft_model = data.models[drafter % data.models.size()];
  }
  hardware.num_gpus = num_gpus != 0 ? num_gpus
                                    : config.tensor_parallel_size * config.pipeline_parallel_size *
                                          config.data_parallel_size;
  std::int64_t context = 0;
  switch (in.take<std::uint8_t>() % 3) {
    case 1:
      context = in.take<std::uint32_t>() % (spec.max_position_embeddings + 1);
      break;
    case 2:
      context = in.take<std::int64_t>();
      break;
    default:
      break;
  }
  const std::int64_t concurrency = mode_value(in, 0, 1);
  const std::int64_t margin = mode_value(in, vramplan::SolveRequest{}.safety_margin_bytes, kMiB);
  const double utilization_step = 0.01 * in.take<std::uint8_t>();
  const std::int64_t context_step = in.take<std::uint16_t>();

  // Anything but a vramplan::Error out of these is a bug (the caller aborts on it).
  std::unique_ptr<CompiledLaunch> launch;
  Plan plan;
  try {
    launch = std::make_unique<CompiledLaunch>(spec_ptr, hardware, config);
    plan = vramplan::solve(*launch, context, concurrency, margin);
  } catch (const vramplan::Error&) {
    return;
  }
  // From here the launch compiled and solved: replays of it must not throw at all.
  check_plan(spec, hardware, plan, context, concurrency);

  // Memory: one more GiB on the card, on the same side of the batch-default threshold.
  const std::int64_t total = hardware.gpu.total_memory_bytes;
  HardwareConfig bigger = hardware;
  if (total < std::numeric_limits<std::int64_t>::max() - kGiB)
    bigger.gpu.total_memory_bytes += kGiB;
  if (bigger.gpu.total_memory_bytes != total &&
      vramplan::uses_large_batch_defaults(launch->profile(), hardware.gpu) ==
          vramplan::uses_large_batch_defaults(launch->profile(), bigger.gpu)) {
    const CompiledLaunch roomier(spec_ptr, bigger, config);
    const vramplan::LaunchKnobs pinned = vramplan::launch_knobs(config);
    vramplan::ResolvedKnobs resolved;
    if (launch->try_resolve(pinned, resolved) == vramplan::KnobProblem::None &&
        launch->evaluate(resolved).outcome == Outcome::Started) {
      check(roomier.breakdown(pinned).outcome == Outcome::Started,
            "a started breakdown fails with 1 GiB more GPU memory");
    }
    if (plan.fits) {
      const Plan more = vramplan::solve(roomier, context, concurrency, margin);
      check_plan(spec, bigger, more, context, concurrency);
      check(more.fits, "a fitting plan does not fit with 1 GiB more GPU memory");
    }
  }

  // Utilization: at the plan's knobs, raised by the step.
  vramplan::LaunchKnobs low = knobs_at(plan);
  vramplan::LaunchKnobs high = low;
  high.gpu_memory_utilization = std::min(1.0, *low.gpu_memory_utilization + utilization_step);
  const Breakdown at_low = launch->breakdown(low);
  if (at_low.outcome == Outcome::Started) {
    const Breakdown at_high = launch->breakdown(high);
    for (std::size_t i = 0; i < at_low.ranks.size(); ++i) {
      check(at_high.ranks[i].kv_cache_bytes >= at_low.ranks[i].kv_cache_bytes,
            "a higher utilization lowers a rank's KV cache");
    }
  }

  // Context: the user's knobs at two lengths, both accepted by the engine.
  vramplan::LaunchKnobs shorter = vramplan::launch_knobs(config);
  shorter.max_model_len = std::max<std::int64_t>(
      1, std::min(plan.max_model_len, spec.max_position_embeddings - context_step));
  vramplan::LaunchKnobs longer = shorter;
  longer.max_model_len = *shorter.max_model_len + context_step;
  vramplan::ResolvedKnobs r_short;
  vramplan::ResolvedKnobs r_long;
  // Where the longer context turns V0's chunked prefill on (above 32768 tokens), the profile
  // runs a 512- or 2048-token batch instead of a whole prompt, and the KV cache may grow: vLLM
  // made that switch for exactly this reason. The monotony holds at one chunking mode.
  if (launch->try_resolve(shorter, r_short) == vramplan::KnobProblem::None &&
      launch->try_resolve(longer, r_long) == vramplan::KnobProblem::None &&
      r_short.chunked_prefill == r_long.chunked_prefill) {
    check(launch->evaluate(r_long).max_concurrency <= launch->evaluate(r_short).max_concurrency,
          "a longer max_model_len raises the maximum concurrency");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  try {
    run(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_plan: exception escaped: %s\n", e.what());
    std::abort();
  }
  return 0;
}
