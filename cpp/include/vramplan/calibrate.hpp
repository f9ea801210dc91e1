// Calibration: fit the few fitted constants of one (GPU, engine version) to a user's own
// measured startups by bounded linear least squares (Eigen), and read/write the profile YAML
// that carries them ({engine_version, gpu, fitted_on, overrides}).
//
// The design matrix comes from the planner itself: each column is how every predicted term of
// every launch moves when one constant moves (the terms are linear in the constants, up to the
// activation's max(forward, sampler), so the fit re-linearises until it settles). Nothing here
// re-derives a formula of the memory model.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {

// The constants cannot be identified from the launches given (too few, identical or collinear
// logs, or a requested term no log exercises). `terms()` names each one with the reason.
class CalibrationError : public Error {
 public:
  CalibrationError(std::vector<std::string> terms, const std::string& problem);
  const std::vector<std::string>& terms() const noexcept { return terms_; }

 private:
  std::vector<std::string> terms_;
};

// What one startup log printed, per GPU rank (the first rank that logged it); unset where the
// log does not print the figure.
struct MeasuredStartup {
  std::optional<std::int64_t> activation_peak_bytes;
  std::optional<std::int64_t> non_torch_bytes;
  std::optional<std::int64_t> cudagraph_bytes;
  std::optional<std::int64_t> kv_cache_bytes;
  std::optional<std::int64_t> startup_free_bytes;  // free memory when the engine starts
  std::optional<std::int64_t> kv_tokens;           // reported only, not fitted
  // "Estimated CUDA graph memory: X GiB total": where the launch's row charges the estimate in
  // the budget, a fitted launch's available KV is predicted with this figure in place of the
  // planner's pool, so its KV does not pull the pool's constants (the engine's estimate is not
  // its pool: 0.50 against 0.67 GiB for pub-464). Not a fitted figure; a held-out launch keeps
  // the planner's.
  std::optional<std::int64_t> cudagraph_estimate_bytes;
};

// One measured launch. `config.profile` is ignored: every launch is evaluated with the profile
// under fit.
struct CalibrationSample {
  std::string id;
  std::shared_ptr<const ModelSpec> spec;
  HardwareConfig hardware;
  EngineConfig config;
  MeasuredStartup measured;
  bool held_out = false;  // predicted before and after, never fitted on
  // A launch of another vLLM version: evaluated with its own engine row, which shares with the
  // row under fit each constant whose value the two rows have in common (so a 0.10 launch can
  // inform the graph pool of a 0.19 fit, not its 0.10-only non-torch figure). Null: the row
  // under fit.
  std::shared_ptr<const EngineProfile> own_row;
};

// What is known of one constant before any launch is fitted (a device measurement, a derivation
// from vLLM's code). With priors the fit is a maximum a posteriori one: each prior adds the
// equation (constant - value) / sigma = 0 beside the launches' figures, so a constant moves from
// its prior only as far as the launches demand; one no launch exercises keeps the packaged
// row's value (a prior alone never replaces a value fitted to measured launches).
struct CalibrationPrior {
  std::string name;    // a calibrated constant ("cudagraph_pool_mib.piece" for the pool's)
  double value = 0.0;  // in the constant's engines.yaml unit
  double sigma = 0.0;  // standard deviation, same unit, > 0
  std::string source;  // where the value comes from
};

struct CalibrationOptions {
  // Terms to fit: group names ("context", "non_torch", "activation", "cudagraph") or constant
  // names (an engines.yaml field, "cudagraph_pool_mib.piece" for the pool's). Empty: every
  // constant the launches identify. A requested constant (or a group none of whose constants)
  // that cannot be identified is a CalibrationError.
  std::vector<std::string> terms;
  // Standard deviation of a measured figure: logs print GiB with two decimals.
  double measurement_sigma_gib = 0.005;
  // Standard deviation of a CUDA-graph figure where it differs (0: measurement_sigma_gib): a
  // pool varies between machines of one GPU type far more than the other terms
  // (docs/validation/graph-and-non-torch.md), so a fit across machines weighs it apart.
  double cudagraph_sigma_gib = 0.0;
  // Empty: a least-squares fit from `base`. Otherwise every requested constant with a prior
  // starts at its prior value and is fitted (one launch is then enough).
  std::vector<CalibrationPrior> priors;
  // A constant with a prior that no launch exercises: false keeps `base`'s value (a user's
  // profile: the packaged row was fitted to measured launches); true takes the prior (a
  // leave-one-source-out fit, whose base row may have been fitted on the held-out source).
  bool unexercised_take_prior = false;
};

// One fitted constant, in its engines.yaml unit (bytes, MiB, bytes per logit, buffers).
struct FittedConstant {
  std::string name;  // engines.yaml field ("cudagraph_pool_mib.piece" for the pool's)
  std::string unit;
  double before = 0.0;
  double after = 0.0;
  double standard_error = 0.0;  // from measurement_sigma_gib; 0 when not fitted
  bool fitted = false;
  // "fitted", "fitted, at the lower bound 0", "not exercised: ...", "not identified: ..."
  std::string status;
};

// Predicted minus measured for one term of one launch, before and after the fit.
struct TermError {
  std::string sample_id;
  std::string term;  // activation_peak_gib, non_torch_gib, cudagraph_gib, kv_cache_gib,
                     // startup_free_gib (GiB) or kv_tokens (tokens)
  double measured = 0.0;
  double predicted_before = 0.0;
  double predicted_after = 0.0;
  bool held_out = false;
};

struct CalibrationResult {
  EngineProfile profile;  // the base row with the fitted constants
  std::vector<FittedConstant> constants;
  std::vector<TermError> errors;
  std::vector<std::string> fitted_on;   // sample ids the fit used (duplicates dropped)
  std::vector<std::string> duplicates;  // "<id> repeats <id>": same launch and figures
  double condition_number = 0.0;        // of the scaled design matrix of the fitted constants
  std::int32_t iterations = 0;
};

// Fits `base`'s constants to the samples that are not held out. Throws CalibrationError when
// fewer than two distinct launches remain, when nothing can be identified, or when a requested
// term cannot be; ConfigError when a launch is invalid.
CalibrationResult calibrate(const EngineProfile& base,
                            const std::vector<CalibrationSample>& samples,
                            const CalibrationOptions& options = {});

// The priors in effect at `engine_version` from a priors document (model_specs/
// calibration_priors.yaml): rows by `from_version` like engines.yaml, a later row overriding
// an earlier one constant by constant; each constant {value, sigma, source}. Throws SpecError
// naming `file` and the field.
std::vector<CalibrationPrior> parse_calibration_priors(const std::string& yaml_text,
                                                       const std::string& file,
                                                       const std::string& engine_version);

// A calibration profile document, as written by calibration_profile_yaml and read back by
// parse_calibration_profile: the engine version and GPU it is for, the launches behind it, and
// an `overrides:` map apply_profile_overrides reads.
struct CalibrationProfile {
  std::string engine_version;
  std::string gpu;
  std::vector<std::string> fitted_on;
  EngineProfile profile;  // engine_profile(engine_version) with the overrides applied
};

std::string calibration_profile_yaml(const CalibrationResult& result,
                                     const std::string& engine_version, const std::string& gpu);

// Throws SpecError naming `file` and the field.
CalibrationProfile parse_calibration_profile(const std::string& yaml_text, const std::string& file);

}  // namespace vramplan
