// Calibration by least squares: launches whose "measured" figures the planner itself produced
// at known constants give those constants back; too few, identical or eager-only launches are
// a CalibrationError naming the constants they cannot identify; the profile YAML round-trips
// through apply_profile_overrides.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "vramplan/calibrate.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"

using namespace vramplan;
using vramplan_test::kGiB;

namespace {

// The constants the synthetic launches were "measured" with: every fitted constant moved away
// from its engines.yaml 0.19 value (256 MiB, 75.5 MiB... below), by 5-40%.
EngineProfile truth() {
  EngineProfile p = engine_profile("0.19.0");
  p.non_torch_single_rank_bytes = 300 << 20;         // row: 256 MiB
  p.non_torch_pipeline_only_bytes = 100 << 20;       // row: 72 MiB
  p.non_torch_tensor_parallel_bytes = 2300LL << 20;  // row: 2110 MiB
  p.cuda_context_bytes = 600 << 20;                  // row: 522 MiB
  p.nccl_communicator_bytes = 200 << 20;             // row: 256 MiB
  p.sampler_bytes_per_logit = 20.0;                  // row: 13.2
  p.forward_hidden_buffers = 7.5;                    // row: 6
  p.cudagraph_base_mib = 150.0;                      // row: 107
  p.cudagraph_piece_mib = 0.30;                      // row: 0.36
  return p;
}

struct Launch {
  const char* id;
  std::int32_t tp;
  std::int32_t pp;
  std::int64_t max_num_seqs;  // 0: vLLM's default (1024 on an H100)
  bool eager;
};

// Llama-3.1-8B on H100s with vLLM 0.19: TP=1/2/4 and PP=2 change the non-torch regime, the
// hidden width per rank and the layers per stage; 16 sequences make the forward (not the
// sampler) the activation peak and capture 7 graph sizes instead of 51.
const Launch kLaunches[] = {
    {"tp1", 1, 1, 0, false}, {"tp2", 2, 1, 0, false},         {"tp4", 4, 1, 0, false},
    {"pp2", 1, 2, 0, false}, {"tp1-seqs16", 1, 1, 16, false}, {"tp2-seqs16", 2, 1, 16, false},
};

CalibrationSample sample_of(const Launch& l, const EngineProfile& measured_with,
                            bool round_like_a_log) {
  CalibrationSample s;
  s.id = l.id;
  s.spec =
      std::make_shared<const ModelSpec>(vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B));
  s.hardware.gpu = vramplan_test::h100();
  s.hardware.num_gpus = 4;
  s.config.engine_version = "0.19.0";
  s.config.gpu_memory_utilization = 0.95;
  s.config.max_model_len = 8192;
  s.config.tensor_parallel_size = l.tp;
  s.config.pipeline_parallel_size = l.pp;
  s.config.enforce_eager = l.eager;
  if (l.max_num_seqs > 0) s.config.max_num_seqs = l.max_num_seqs;
  EngineConfig measured_config = s.config;
  measured_config.profile = std::make_shared<const EngineProfile>(measured_with);
  const Breakdown b = compute_breakdown(*s.spec, s.hardware, measured_config);
  const RankBreakdown& r = b.ranks.front();
  // vLLM prints GiB with two decimals.
  auto figure = [&](std::int64_t bytes) {
    if (!round_like_a_log) return bytes;
    return static_cast<std::int64_t>(std::round(static_cast<double>(bytes) / kGiB * 100.0) / 100.0 *
                                     kGiB);
  };
  s.measured.activation_peak_bytes = figure(r.activation_peak_bytes);
  s.measured.non_torch_bytes = figure(r.non_torch_bytes);
  if (!l.eager) s.measured.cudagraph_bytes = figure(r.cudagraph_bytes);
  s.measured.kv_cache_bytes = figure(r.kv_cache_bytes);
  s.measured.startup_free_bytes = figure(b.startup_free_bytes);
  s.measured.kv_tokens = b.kv_tokens;
  return s;
}

std::vector<CalibrationSample> synthetic(bool round_like_a_log) {
  std::vector<CalibrationSample> out;
  for (const Launch& l : kLaunches) out.push_back(sample_of(l, truth(), round_like_a_log));
  return out;
}

const FittedConstant& constant(const CalibrationResult& r, const std::string& name) {
  for (const FittedConstant& c : r.constants) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no constant " << name;
  return r.constants.front();
}

}  // namespace

TEST(Calibrate, ExactSyntheticFiguresGiveTheConstantsBack) {
  const EngineProfile row = engine_profile("0.19.0");
  const CalibrationResult fit = calibrate(row, synthetic(false));
  const EngineProfile t = truth();
  const EngineProfile& got = fit.profile;
  // Byte constants to the byte rounding of the planner's integer terms; coefficients to 1e-6.
  EXPECT_NEAR(got.non_torch_single_rank_bytes, t.non_torch_single_rank_bytes, 1024);
  EXPECT_NEAR(got.non_torch_pipeline_only_bytes, t.non_torch_pipeline_only_bytes, 1024);
  EXPECT_NEAR(got.non_torch_tensor_parallel_bytes, t.non_torch_tensor_parallel_bytes, 1024);
  EXPECT_NEAR(got.cuda_context_bytes, t.cuda_context_bytes, 1024);
  EXPECT_NEAR(got.nccl_communicator_bytes, t.nccl_communicator_bytes, 1024);
  EXPECT_NEAR(got.sampler_bytes_per_logit, 20.0, 1e-4);
  EXPECT_NEAR(got.forward_hidden_buffers, 7.5, 1e-4);
  EXPECT_NEAR(got.cudagraph_base_mib, 150.0, 1e-3);
  EXPECT_NEAR(got.cudagraph_piece_mib, 0.30, 1e-6);
  for (const FittedConstant& c : fit.constants) EXPECT_TRUE(c.fitted) << c.name << ": " << c.status;
  EXPECT_EQ(fit.fitted_on.size(), 6u);
  EXPECT_GT(fit.condition_number, 1.0);
  // After the fit every figure is the measured one.
  for (const TermError& e : fit.errors) {
    if (e.term == "kv_tokens") continue;  // tokens move by whole blocks
    EXPECT_NEAR(e.predicted_after, e.measured, 1e-5) << e.sample_id << " " << e.term;
  }
}

TEST(Calibrate, FiguresRoundedLikeALogGiveTheConstantsWithinTheirStandardErrors) {
  const CalibrationResult fit = calibrate(engine_profile("0.19.0"), synthetic(true));
  const EngineProfile t = truth();
  const double expected[] = {
      static_cast<double>(t.non_torch_single_rank_bytes),
      static_cast<double>(t.non_torch_pipeline_only_bytes),
      static_cast<double>(t.non_torch_tensor_parallel_bytes),
      static_cast<double>(t.cuda_context_bytes),
      static_cast<double>(t.nccl_communicator_bytes),
      t.sampler_bytes_per_logit,
      t.forward_hidden_buffers,
      t.cudagraph_base_mib,
      t.cudagraph_piece_mib,
  };
  ASSERT_EQ(fit.constants.size(), 9u);
  for (std::size_t i = 0; i < 9; ++i) {
    const FittedConstant& c = fit.constants[i];
    ASSERT_TRUE(c.fitted) << c.name << ": " << c.status;
    // Rounding to 0.01 GiB is uniform noise of sd 0.0029 GiB, inside the 0.005 GiB assumed:
    // the truth lies within three standard errors.
    EXPECT_LE(std::abs(c.after - expected[i]), 3.0 * c.standard_error) << c.name;
    EXPECT_GT(c.standard_error, 0.0) << c.name;
  }
}

TEST(Calibrate, OneLaunchOrIdenticalLogsNameEveryConstant) {
  const EngineProfile row = engine_profile("0.19.0");
  std::vector<CalibrationSample> one = {sample_of(kLaunches[0], truth(), true)};
  try {
    calibrate(row, one);
    FAIL() << "one launch fitted";
  } catch (const CalibrationError& e) {
    EXPECT_EQ(e.terms().size(), 9u);
    EXPECT_NE(std::string(e.what()).find("1 distinct launch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudagraph_pool_mib.piece"), std::string::npos);
  }
  std::vector<CalibrationSample> twice = {one[0], one[0]};
  twice[1].id = "tp1-again";
  try {
    calibrate(row, twice);
    FAIL() << "identical logs fitted";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("identical logs count once"), std::string::npos)
        << e.what();
  }
}

TEST(Calibrate, EagerOnlyLaunchesCannotIdentifyTheGraphPool) {
  std::vector<CalibrationSample> eager;
  for (Launch l : kLaunches) {
    l.eager = true;
    eager.push_back(sample_of(l, truth(), true));
  }
  const EngineProfile row = engine_profile("0.19.0");
  CalibrationOptions graph;
  graph.terms = {"cudagraph"};
  try {
    calibrate(row, eager, graph);
    FAIL() << "graph pool fitted on eager launches";
  } catch (const CalibrationError& e) {
    ASSERT_EQ(e.terms().size(), 2u);
    EXPECT_EQ(e.terms()[0], "cudagraph_pool_mib.base");
    EXPECT_NE(std::string(e.what()).find("not exercised"), std::string::npos) << e.what();
  }
  // Asked for everything, the rest is fitted and the pool keeps the row's values, reported.
  const CalibrationResult fit = calibrate(row, eager);
  const FittedConstant& base = constant(fit, "cudagraph_pool_mib.base");
  EXPECT_FALSE(base.fitted);
  EXPECT_EQ(base.after, row.cudagraph_base_mib);
  EXPECT_NE(base.status.find("not exercised"), std::string::npos);
  EXPECT_TRUE(constant(fit, "sampler_bytes_per_logit").fitted);
}

TEST(Calibrate, CollinearLaunchesKeepTheRowValueAndSayWhy) {
  // TP=1 and TP=2 at the default batch: 51 sizes x 32 layers in both, so the pool's base and
  // its per-piece constant move every figure alike.
  std::vector<CalibrationSample> two = {sample_of(kLaunches[0], truth(), true),
                                        sample_of(kLaunches[1], truth(), true)};
  const EngineProfile row = engine_profile("0.19.0");
  const CalibrationResult fit = calibrate(row, two);
  const FittedConstant& piece = constant(fit, "cudagraph_pool_mib.piece");
  EXPECT_FALSE(piece.fitted);
  EXPECT_DOUBLE_EQ(piece.after, row.cudagraph_piece_mib);
  EXPECT_NE(piece.status.find("collinear with cudagraph_pool_mib.base"), std::string::npos)
      << piece.status;
  EXPECT_TRUE(constant(fit, "cudagraph_pool_mib.base").fitted);
  // No PP launch: that regime's non-torch memory is not exercised.
  EXPECT_NE(constant(fit, "non_torch_pipeline_only_bytes").status.find("not exercised"),
            std::string::npos);
  // Requesting both by name is an error naming the piece; the piece alone (base kept) is not.
  CalibrationOptions named;
  named.terms = {"cudagraph_pool_mib.base", "cudagraph_pool_mib.piece"};
  try {
    calibrate(row, two, named);
    FAIL() << "collinear pair fitted";
  } catch (const CalibrationError& e) {
    EXPECT_EQ(e.terms(), std::vector<std::string>{"cudagraph_pool_mib.piece"});
  }
  named.terms = {"cudagraph_pool_mib.piece"};
  EXPECT_TRUE(constant(calibrate(row, two, named), "cudagraph_pool_mib.piece").fitted);
  named.terms = {"weights"};
  EXPECT_THROW(calibrate(row, two, named), ConfigError);
}

TEST(Calibrate, ConstantsStayInsidePhysicalBounds) {
  // Figures no non-negative constant can produce: 0 GiB of non-torch memory less than nothing.
  std::vector<CalibrationSample> samples = synthetic(true);
  for (CalibrationSample& s : samples) {
    if (s.config.tensor_parallel_size == 1 && s.config.pipeline_parallel_size == 1) {
      s.measured.non_torch_bytes = -static_cast<std::int64_t>(kGiB / 4);
    }
  }
  const CalibrationResult fit = calibrate(engine_profile("0.19.0"), samples);
  const FittedConstant& nt = constant(fit, "non_torch_single_rank_bytes");
  EXPECT_TRUE(nt.fitted);
  EXPECT_EQ(nt.after, 0.0);
  EXPECT_NE(nt.status.find("bound"), std::string::npos) << nt.status;
}

TEST(Calibrate, HeldOutLaunchesArePredictedNotFitted) {
  std::vector<CalibrationSample> samples = synthetic(false);
  samples[2].held_out = true;  // tp4
  const CalibrationResult fit = calibrate(engine_profile("0.19.0"), samples);
  EXPECT_EQ(fit.fitted_on.size(), 5u);
  bool seen = false;
  for (const TermError& e : fit.errors) {
    if (e.sample_id != "tp4") continue;
    seen = true;
    EXPECT_TRUE(e.held_out);
  }
  EXPECT_TRUE(seen);
}

TEST(Calibrate, ProfileYamlRoundTripsThroughTheOverrides) {
  const EngineProfile row = engine_profile("0.19.0");
  const CalibrationResult fit = calibrate(row, synthetic(false));
  const std::string yaml = calibration_profile_yaml(fit, "0.19.0", "H100-80GB");
  const CalibrationProfile loaded = parse_calibration_profile(yaml, "fit.yaml");
  EXPECT_EQ(loaded.engine_version, "0.19.0");
  EXPECT_EQ(loaded.gpu, "H100-80GB");
  EXPECT_EQ(loaded.fitted_on, fit.fitted_on);
  EXPECT_EQ(loaded.profile.non_torch_tensor_parallel_bytes,
            fit.profile.non_torch_tensor_parallel_bytes);
  EXPECT_NEAR(loaded.profile.cudagraph_piece_mib, fit.profile.cudagraph_piece_mib, 1e-12);
  EXPECT_NEAR(loaded.profile.sampler_bytes_per_logit, fit.profile.sampler_bytes_per_logit, 1e-6);
  // The same overrides through the engine's own reader give the same row.
  const EngineProfile applied = apply_profile_overrides(row, yaml, "fit.yaml");
  EXPECT_EQ(applied.cuda_context_bytes, loaded.profile.cuda_context_bytes);
  for (const char* bad : {"overrides: {}\n", "engine_version: \"0.19.0\"\nwhat: 1\n",
                          "engine_version: \"0.4\"\noverrides: {}\n",
                          "engine_version: \"0.19.0\"\nfitted_on: 3\noverrides: {}\n"}) {
    EXPECT_THROW(parse_calibration_profile(bad, "bad.yaml"), SpecError) << bad;
  }
}

namespace {

// One TP=1 launch whose log prints only its non-torch memory, measured at truth()'s 300 MiB.
CalibrationSample non_torch_only() {
  CalibrationSample s = sample_of(kLaunches[0], truth(), false);
  s.measured = MeasuredStartup{};
  s.measured.non_torch_bytes = sample_of(kLaunches[0], truth(), false).measured.non_torch_bytes;
  return s;
}

}  // namespace

TEST(CalibratePriors, ThePosteriorWeighsDataAndPriorByTheirVariances) {
  // Hand derivation: one equation x = 300 MiB with sigma d (the log's 0.005 GiB), one prior
  // x = 200 MiB with sigma 2d. Weights 1/d^2 and 1/(4 d^2): x = (4 x 300 + 200) / 5 = 280 MiB,
  // standard error d / sqrt(1 + 1/4) = 0.8944 d = 4.580 MiB.
  CalibrationOptions options;
  options.terms = {"non_torch_single_rank_bytes"};
  const double d_bytes = options.measurement_sigma_gib * kGiB;
  options.priors = {{"non_torch_single_rank_bytes", 200.0 * (1 << 20), 2.0 * d_bytes, "test"}};
  const CalibrationResult fit = calibrate(engine_profile("0.19.0"), {non_torch_only()}, options);
  const FittedConstant& nt = constant(fit, "non_torch_single_rank_bytes");
  EXPECT_TRUE(nt.fitted);
  EXPECT_NEAR(nt.after / (1 << 20), 280.0, 0.01);
  EXPECT_NEAR(nt.standard_error / (1 << 20), 4.580, 0.005);
  EXPECT_NE(nt.status.find("fitted from its prior 200 MiB +- 10.24 MiB (test)"), std::string::npos)
      << nt.status;
  EXPECT_EQ(nt.before, 256.0 * (1 << 20));  // the row's value, reported as before
  // A prior 20 d wide leaves the data in charge: (400 x 300 + 200) / 401 = 299.75 MiB.
  options.priors.front().sigma = 20.0 * d_bytes;
  EXPECT_NEAR(calibrate(engine_profile("0.19.0"), {non_torch_only()}, options)
                      .profile.non_torch_single_rank_bytes /
                  double{1 << 20},
              299.75, 0.01);
}

TEST(CalibratePriors, CudaGraphFiguresWeighByTheirOwnSigma) {
  // One launch printing only its graph pool, measured with the 0.19 row's pool at base 450 MiB,
  // so the figure says base = 450; the prior says 350 MiB with sigma 2d (d: the log's 0.005
  // GiB). Weighed like every figure (sigma d): x = (4 x 450 + 350) / 5 = 430 MiB. Weighed by a
  // CUDA-graph sigma of 2d, figure and prior count alike: x = (450 + 350) / 2 = 400 MiB.
  EngineProfile measured_with = engine_profile("0.19.0");
  measured_with.cudagraph_base_mib = 450.0;
  CalibrationSample graph_only = sample_of(kLaunches[0], measured_with, false);
  const std::optional<std::int64_t> pool = graph_only.measured.cudagraph_bytes;
  graph_only.measured = MeasuredStartup{};
  graph_only.measured.cudagraph_bytes = pool;
  CalibrationOptions options;
  options.terms = {"cudagraph_pool_mib.base"};
  const double d_mib = options.measurement_sigma_gib * 1024.0;
  options.priors = {{"cudagraph_pool_mib.base", 350.0, 2.0 * d_mib, "test"}};
  auto base_after = [&](double cudagraph_sigma_gib) {
    options.cudagraph_sigma_gib = cudagraph_sigma_gib;
    return calibrate(engine_profile("0.19.0"), {graph_only}, options).profile.cudagraph_base_mib;
  };
  EXPECT_NEAR(base_after(0.0), 430.0, 0.01);
  EXPECT_NEAR(base_after(2.0 * options.measurement_sigma_gib), 400.0, 0.01);
  options.cudagraph_sigma_gib = -1.0;
  try {
    (void)calibrate(engine_profile("0.19.0"), {graph_only}, options);
    ADD_FAILURE() << "a negative CUDA-graph sigma was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "cudagraph_sigma_gib");
  }
}

TEST(CalibratePriors, AConstantNoLogExercisesKeepsItsPackagedValue) {
  // Eager launches show no graph pool: with or without a prior it keeps the row's value and is
  // not fitted (a prior alone must not replace a value fitted to measured launches), and the
  // status says so, naming the prior left unused.
  std::vector<CalibrationSample> eager;
  for (Launch l : kLaunches) {
    l.eager = true;
    eager.push_back(sample_of(l, truth(), true));
  }
  CalibrationOptions options;
  options.priors = {{"cudagraph_pool_mib.base", 64.0, 256.0, "device"},
                    {"sampler_bytes_per_logit", 13.0, 2.0, "code"}};
  const EngineProfile row = engine_profile("0.19.0");
  const CalibrationResult fit = calibrate(row, eager, options);
  const FittedConstant& base = constant(fit, "cudagraph_pool_mib.base");
  EXPECT_FALSE(base.fitted);
  EXPECT_DOUBLE_EQ(base.after, base.before);
  EXPECT_NE(base.status.find("kept at the packaged value (no log measures CUDA-graph memory"),
            std::string::npos)
      << base.status;
  EXPECT_NE(base.status.find("(device)"), std::string::npos);
  // The sampler is exercised (the 1024-sequence launches' activation is the sampler's):
  // the launches measured it at 20 B per logit, and two-decimal figures pin it far tighter than
  // the prior's 2 B, so it lands near 20.
  EXPECT_NEAR(constant(fit, "sampler_bytes_per_logit").after, 20.0, 0.5);
  EXPECT_EQ(calibration_profile_yaml(fit, "0.19.0", "H100").find("base: 64"), std::string::npos);
  // Leave-one-source-out asks for the prior instead: its base row may carry the held-out
  // source's own fit.
  options.unexercised_take_prior = true;
  const CalibrationResult loso = calibrate(row, eager, options);
  const FittedConstant& prior_only = constant(loso, "cudagraph_pool_mib.base");
  EXPECT_TRUE(prior_only.fitted);
  EXPECT_DOUBLE_EQ(prior_only.after, 64.0);
  EXPECT_NE(prior_only.status.find("its prior only (no log measures CUDA-graph memory"),
            std::string::npos)
      << prior_only.status;
}

TEST(CalibratePriors, OneLaunchIsEnoughWithAPriorButNotWithout) {
  CalibrationOptions options;
  options.terms = {"non_torch"};
  EXPECT_THROW(calibrate(engine_profile("0.19.0"), {non_torch_only()}, options), CalibrationError);
  options.priors = {{"non_torch_single_rank_bytes", 256.0 * (1 << 20), 128.0 * (1 << 20), "x"}};
  std::vector<CalibrationSample> none = {non_torch_only()};
  none.front().held_out = true;
  try {
    calibrate(engine_profile("0.19.0"), none, options);
    ADD_FAILURE() << "fitted on no launch";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("0 distinct launches to fit from the priors"),
              std::string::npos)
        << e.what();
  }
  const CalibrationResult fit = calibrate(engine_profile("0.19.0"), {non_torch_only()}, options);
  EXPECT_NEAR(fit.profile.non_torch_single_rank_bytes / double{1 << 20}, 300.0, 0.1);
}

TEST(CalibratePriors, BadPriorsNameTheEntryAndTheField) {
  auto error_of = [](const CalibrationPrior& prior) {
    CalibrationOptions options;
    options.priors = {{"sampler_bytes_per_logit", 13.0, 2.0, "ok"}, prior};
    try {
      calibrate(engine_profile("0.19.0"), synthetic(true), options);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of({"weights", 1.0, 1.0, ""}).find("priors[1].name"), std::string::npos);
  EXPECT_NE(error_of({"sampler_bytes_per_logit", 12.0, 1.0, ""}).find("a second prior"),
            std::string::npos);
  EXPECT_NE(error_of({"forward_hidden_buffers", 6.0, 0.0, ""}).find("priors[1].sigma"),
            std::string::npos);
  EXPECT_NE(error_of({"forward_hidden_buffers", 6.0, std::nan(""), ""}).find("priors[1].sigma"),
            std::string::npos);
  EXPECT_NE(error_of({"forward_hidden_buffers", 65.0, 1.0, ""}).find("priors[1].value"),
            std::string::npos);
}

TEST(CalibratePriors, ThePriorsDocumentIsReadByVersion) {
  const std::string doc = R"(rows:
  - from_version: "0.5"
    sampler_bytes_per_logit: {value: 36.0, sigma: 4.0, source: "native"}
    forward_hidden_buffers: {value: 3.0, sigma: 1.0, source: "eager"}
  - from_version: "0.17.0"
    sampler_bytes_per_logit: {value: 13.0, sigma: 2.0, source: "triton"}
)";
  auto value_of = [&](const std::string& version, const std::string& name) {
    for (const CalibrationPrior& p : parse_calibration_priors(doc, "priors.yaml", version)) {
      if (p.name == name) return p.value;
    }
    return -1.0;
  };
  EXPECT_EQ(value_of("0.16.0", "sampler_bytes_per_logit"), 36.0);
  EXPECT_EQ(value_of("0.17.0", "sampler_bytes_per_logit"), 13.0);
  EXPECT_EQ(value_of("0.19.1", "forward_hidden_buffers"), 3.0);  // inherited from 0.5
  EXPECT_EQ(parse_calibration_priors(doc, "priors.yaml", "0.19.1").size(), 2u);
  auto error_of = [](const std::string& text) {
    try {
      parse_calibration_priors(text, "priors.yaml", "0.19.0");
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Each bad document and the part of the error that names where it is bad.
  const std::pair<const char*, const char*> bad[] = {
      {"rows: 3", "priors.yaml"},
      {"rows:\n  - sampler_bytes_per_logit: {value: 1, sigma: 1, source: s}\n",
       "rows[0].from_version"},
      {"rows:\n  - {from_version: \"0.5\", weights: {value: 1, sigma: 1, source: s}}\n",
       "rows[0].weights"},
      {"rows:\n  - {from_version: \"0.5\", sampler_bytes_per_logit: {value: x, sigma: 1, "
       "source: s}}\n",
       "rows[0].sampler_bytes_per_logit.value"},
      {"rows:\n  - {from_version: \"0.5\", sampler_bytes_per_logit: {value: 1, sigma: 1}}\n",
       "source"},
      // Out of the constant's range (0 .. 200 B per logit) or a sigma of 0: the file's field.
      {"rows:\n  - {from_version: \"0.5\", sampler_bytes_per_logit: {value: 500, sigma: 1, "
       "source: s}}\n",
       "rows[0].sampler_bytes_per_logit.value"},
      {"rows:\n  - {from_version: \"0.5\", sampler_bytes_per_logit: {value: 13, sigma: 0, "
       "source: s}}\n",
       "rows[0].sampler_bytes_per_logit.sigma"},
      {"rows:\n  - {from_version: \"0.9\"}\n  - {from_version: \"0.8\"}\n", "ascending"},
  };
  for (const auto& [text, where] : bad) {
    EXPECT_NE(error_of(text).find(where), std::string::npos) << text;
  }
}

TEST(CalibrateOwnRow, ALaunchOfAnotherVersionInformsOnlyTheConstantsItsRowShares) {
  // The 0.19 launches of truth(), plus one 0.15 launch (its row: 0.13 GiB of single-rank
  // non-torch memory, 36.9 B per logit; the graph pool's constants are the same in every row)
  // whose log prints 2 GiB of non-torch memory and truth()'s graph pool.
  std::vector<CalibrationSample> samples = synthetic(false);
  const EngineProfile row15 = engine_profile("0.15.0");
  ASSERT_NE(row15.non_torch_single_rank_bytes,
            engine_profile("0.19.0").non_torch_single_rank_bytes);
  ASSERT_EQ(row15.cudagraph_base_mib, engine_profile("0.19.0").cudagraph_base_mib);
  EngineProfile measured15 = row15;
  measured15.cudagraph_base_mib = truth().cudagraph_base_mib;
  measured15.cudagraph_piece_mib = truth().cudagraph_piece_mib;
  CalibrationSample old = sample_of({"v015", 1, 1, 64, false}, measured15, false);
  old.config.engine_version = "0.15.0";
  old.measured.non_torch_bytes = static_cast<std::int64_t>(2 * kGiB);
  old.own_row = std::make_shared<const EngineProfile>(row15);
  samples.push_back(old);
  const CalibrationResult fit = calibrate(engine_profile("0.19.0"), samples);
  // Its 2 GiB does not reach the 0.19 row's constant (the rows do not share it) ...
  EXPECT_NEAR(fit.profile.non_torch_single_rank_bytes, truth().non_torch_single_rank_bytes, 1024);
  EXPECT_NEAR(fit.profile.cudagraph_base_mib, 150.0, 1e-3);
  // ... and its own figures are predicted with its own row's 0.13 GiB, not the fit's.
  for (const TermError& e : fit.errors) {
    if (e.sample_id == "v015" && e.term == "non_torch_gib") {
      EXPECT_NEAR(e.predicted_after, static_cast<double>(row15.non_torch_single_rank_bytes) / kGiB,
                  1e-9);
    }
  }
  // Evaluated with the 0.19 row instead, the same log drags the constant toward 2 GiB.
  samples.back().own_row = nullptr;
  samples.back().config.engine_version = "0.19.0";
  EXPECT_GT(calibrate(engine_profile("0.19.0"), samples).profile.non_torch_single_rank_bytes,
            truth().non_torch_single_rank_bytes + (64 << 20));
}

TEST(Calibrate, AnInBudgetLaunchIsFittedWithTheEstimateItsLogPrints) {
  // 0.21 charges the graph estimate in the budget. A log that prints "Estimated CUDA graph
  // memory: 0.50 GiB total" is fitted as if the planner had charged 0.50 GiB, not its pool:
  // its predicted KV moves up by exactly (pool - 0.50 GiB). A held-out launch keeps the
  // planner's own charge (the estimate is a measured figure).
  const EngineProfile row = engine_profile("0.21.0");
  std::vector<CalibrationSample> samples;
  for (const Launch& l : {kLaunches[0], kLaunches[1], kLaunches[3]}) {
    CalibrationSample s = sample_of(l, truth(), true);
    s.config.engine_version = "0.21.0";
    samples.push_back(s);
  }
  const std::int64_t estimate = kGiB / 2;
  samples[0].measured.cudagraph_estimate_bytes = estimate;
  CalibrationSample held = samples[0];
  held.id = "tp1-held";
  held.held_out = true;
  held.config.max_model_len = 4096;  // not a duplicate of the fitted launch
  samples.push_back(held);
  CalibrationOptions options;
  options.terms = {"cudagraph"};
  const CalibrationResult fit = calibrate(row, samples, options);
  EngineConfig config = samples[0].config;
  config.profile = std::make_shared<const EngineProfile>(row);
  const RankBreakdown planner =
      compute_breakdown(*samples[0].spec, samples[0].hardware, config).ranks.front();
  config.max_model_len = 4096;
  const RankBreakdown planner_held =
      compute_breakdown(*samples[0].spec, samples[0].hardware, config).ranks.front();
  int checked = 0;
  for (const TermError& e : fit.errors) {
    if (e.term != "kv_cache_gib") continue;
    if (e.sample_id == "tp1") {
      ++checked;
      const double expected =
          static_cast<double>(planner.kv_cache_bytes + planner.cudagraph_bytes - estimate) / kGiB;
      EXPECT_NEAR(e.predicted_before, expected, 1e-9);
    }
    if (e.sample_id == "tp1-held") {
      ++checked;
      EXPECT_NEAR(e.predicted_before, static_cast<double>(planner_held.kv_cache_bytes) / kGiB,
                  1e-9);
    }
  }
  EXPECT_EQ(checked, 2);
  EXPECT_GT(planner.cudagraph_bytes, estimate);  // the substitution moved the figure
}

TEST(CalibrateOwnRow, ALaunchOnTheV0FallbackIsEvaluatedWithTheV0Row) {
  // vLLM 0.8 runs V0 on a GPU below compute capability 8.0 ("Falling back to V0"): calibrating
  // the 0.8 (V1) row, such a launch is predicted with the V0 row, as the planner plans it, and
  // not with the V1 row under fit (0.07 GiB of single-rank non-torch memory there, 113 MiB in
  // the V0 row from 0.7).
  const EngineProfile row08 = engine_profile("0.8.0");
  const EngineProfile v0 = v0_fallback_profile(row08);
  ASSERT_NE(row08.non_torch_single_rank_bytes, v0.non_torch_single_rank_bytes);
  std::vector<CalibrationSample> samples = synthetic(false);
  for (CalibrationSample& s : samples) {
    s.own_row = std::make_shared<const EngineProfile>(engine_profile("0.19.0"));
  }
  CalibrationSample turing = sample_of({"turing", 1, 1, 16, true}, truth(), false);
  turing.hardware.gpu.compute_capability = 7.5;
  turing.config.engine_version = "0.8.0";
  turing.held_out = true;
  ASSERT_TRUE(runs_v0_fallback(row08, turing.hardware.gpu));
  samples.push_back(turing);
  const CalibrationResult fit = calibrate(row08, samples);
  bool seen = false;
  for (const TermError& e : fit.errors) {
    if (e.sample_id == "turing" && e.term == "non_torch_gib") {
      seen = true;
      EXPECT_NEAR(e.predicted_before, static_cast<double>(v0.non_torch_single_rank_bytes) / kGiB,
                  1e-9);
    }
  }
  EXPECT_TRUE(seen);
}
