// libFuzzer target for SGLang's plan path from arbitrary knobs (structured fuzzing). The input
// bytes are read in order (an exhausted input reads as zeros):
//   u8 model, u8 GPU, u8 release      indices into the database and the sglang.yaml rows
//   per knob of sglang_knob_specs(), in order: u8 selector + value
//     0 unset; 1 a value inside the knob's range or choices; 2 raw i64; 3 raw double; 4 bool;
//     5 u8 length + text
//   u16 context, u16 concurrency, u16 margin MiB     the plan's targets
// A knob the table refuses stays unset (set_sglang_knob must throw only vramplan::Error).
// Invariants (std::abort on violation):
//   - nothing but vramplan::Error escapes the breakdown, the plan or the sweep of one point;
//   - a plan that fits starts, keeps its margin free in the slack and holds its target;
//   - every remedy that fits carries a flag line, and its replay fits;
//   - a higher mem_fraction_static never shrinks the KV pool of a launch that starts at both.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_knobs.hpp"
#include "vramplan/spec_db.hpp"

namespace {

using fuzz_support::nth_choice;
using fuzz_support::Reader;
using vramplan::KnobSpec;
using vramplan::KnobType;
using vramplan::KnobValue;
using vramplan::SglangConfig;
using vramplan::SglangVerdict;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "fuzz_sglang_plan: invariant violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) violated(what);
}

const vramplan::SpecDatabase& database() {
  static const vramplan::SpecDatabase db =
      vramplan::SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

KnobValue in_range(const KnobSpec& knob, Reader& in) {
  const double r = in.take<std::uint16_t>() / 65535.0;
  switch (knob.type) {
    case KnobType::Fraction:
      return KnobValue{knob.minimum + (knob.maximum - knob.minimum) * r};
    case KnobType::Integer:
    case KnobType::Bytes: {
      // Log-spread over the range: small values are where the rules branch.
      const double low = std::max(knob.minimum, 1.0);
      const double v = low * std::pow(std::max(knob.maximum, low) / low, r);
      return KnobValue{static_cast<std::int64_t>(v)};
    }
    case KnobType::Boolean:
      return KnobValue{r >= 0.5};
    case KnobType::Text:
      break;
  }
  if (!knob.choices.empty()) return KnobValue{nth_choice(knob.choices, in.take<std::uint8_t>())};
  static const char* const kVersions[] = {"0.4.0", "0.4.6.post5", "0.4.10.post2",
                                          "0.5.3", "0.5.23",      "0.6.0"};
  return KnobValue{std::string(kVersions[in.take<std::uint8_t>() % 6])};
}

SglangConfig read_config(Reader& in, std::string& version) {
  SglangConfig config;
  for (const KnobSpec& knob : vramplan::sglang_knob_specs()) {
    KnobValue value;
    switch (in.take<std::uint8_t>() % 6) {
      case 0:
        continue;
      case 1:
        value = in_range(knob, in);
        break;
      case 2:
        value = KnobValue{in.take<std::int64_t>()};
        break;
      case 3:
        value = KnobValue{in.take<double>()};
        break;
      case 4:
        value = KnobValue{(in.take<std::uint8_t>() & 1) != 0};
        break;
      default:
        value = KnobValue{in.text()};
        break;
    }
    if (knob.name == "sglang_version") {
      if (const auto* text = std::get_if<std::string>(&value)) version = *text;
      continue;
    }
    try {
      vramplan::set_sglang_knob(config, knob.name, value);
    } catch (const vramplan::Error&) {
      // refused by the knob table: stays unset
    }
  }
  return config;
}

void check_plan(const vramplan::SglangPlan& plan, const vramplan::SglangTargets& targets) {
  if (plan.fits) {
    check(plan.planned.verdict == SglangVerdict::Started, "a plan that fits starts");
    check(plan.spare_slack_bytes >= targets.safety_margin_bytes,
          "a plan that fits keeps its margin");
    check(plan.concurrent_sequences >= targets.concurrency, "a plan that fits holds its target");
    check(!plan.launch_line.empty(), "a plan carries its launch line");
  }
  for (const vramplan::Remedy& remedy : plan.remedies) {
    check(!remedy.change.empty(), "a remedy names its change");
    if (remedy.fits) check(!remedy.flags.empty(), "a remedy that fits carries its flags");
  }
}

void run(Reader& in) {
  const vramplan::SpecDatabase& db = database();
  static const std::vector<vramplan::ModelSpec> models = db.models();  // every file, parsed once
  const auto& gpus = db.gpus();
  const vramplan::ModelSpec& spec = models[in.take<std::uint8_t>() % models.size()];
  const vramplan::GpuSpec& gpu = gpus[in.take<std::uint8_t>() % gpus.size()];
  const auto& rows = vramplan::sglang_table().rows;
  std::string version = rows[in.take<std::uint8_t>() % rows.size()].release;
  SglangConfig config = read_config(in, version);
  config.model_path = spec.id;
  vramplan::SglangTargets targets;
  targets.context_tokens = in.take<std::uint16_t>();
  targets.concurrency = in.take<std::uint16_t>() % 512;
  targets.safety_margin_bytes = std::int64_t{in.take<std::uint16_t>()} << 20;
  const vramplan::SglangRules& rules = vramplan::sglang_rules(vramplan::sglang_table(), version);
  const vramplan::SglangPlan plan = vramplan::sglang_plan(spec, gpu, rules, config, targets);
  check_plan(plan, targets);
  // Monotone in f where both launches start: the pool's tokens only grow with the fraction.
  // (Its bytes need not: under PP the breakdown is the binding stage's, and a higher fraction
  // can move the binding stage to one with fewer bytes per token.)
  SglangConfig low = config;
  SglangConfig high = config;
  low.mem_fraction_static = 0.5;
  high.mem_fraction_static = 0.9;
  const auto a = vramplan::sglang_breakdown(spec, gpu, rules, low);
  const auto b = vramplan::sglang_breakdown(spec, gpu, rules, high);
  if (a.verdict == SglangVerdict::Started && b.verdict == SglangVerdict::Started) {
    check(b.max_total_num_tokens >= a.max_total_num_tokens,
          "a higher fraction never shrinks the pool");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  try {
    run(in);
  } catch (const vramplan::Error&) {
    // a named error: allowed
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_sglang_plan: escaped: %s\n", e.what());
    std::abort();
  }
  return 0;
}
