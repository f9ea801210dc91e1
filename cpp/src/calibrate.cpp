#include "vramplan/calibrate.hpp"

#include <yaml-cpp/yaml.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "vramplan/calibration.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/knobs.hpp"
#include "yaml_load.hpp"

namespace vramplan {

CalibrationError::CalibrationError(std::vector<std::string> terms, const std::string& problem)
    : Error([&] {
        std::string names;
        for (const std::string& t : terms) names += (names.empty() ? "" : ", ") + t;
        return "calibration: cannot identify " + names + ": " + problem;
      }()),
      terms_(std::move(terms)) {}

namespace {

constexpr double kGiB = static_cast<double>(calibration::kGiB);
constexpr double kMiB = static_cast<double>(calibration::kMiB);

// A fitted constant of an engines.yaml row. `tolerance` is the standard error a fit may leave
// (in the constant's unit) and also the finite-difference step; the bounds are what is
// physically plausible for a GPU process.
struct Constant {
  const char* name;
  const char* group;
  const char* unit;
  double tolerance;
  double low;
  double high;
  const char* exercised_by;  // which measured figure shows it (for "not exercised")
  double (*get)(const EngineProfile&);
  void (*set)(EngineProfile&, double);
};

std::int64_t to_bytes(double v) { return static_cast<std::int64_t>(std::llround(v)); }

constexpr std::size_t kNumConstants = 9;

// In fitting priority: when two constants cannot be told apart the earlier one is fitted.
// Directly printed figures first, then the activation, then the graph pool.
const std::array<Constant, kNumConstants>& constants() {
  static const std::array<Constant, kNumConstants> table = {{
      {"non_torch_single_rank_bytes", "non_torch", "bytes", 32 * kMiB, 0.0, 8 * kGiB,
       "non-torch memory (or the available KV cache) of a TP=1, PP=1 launch",
       [](const EngineProfile& p) { return static_cast<double>(p.non_torch_single_rank_bytes); },
       [](EngineProfile& p, double v) { p.non_torch_single_rank_bytes = to_bytes(v); }},
      {"non_torch_pipeline_only_bytes", "non_torch", "bytes", 32 * kMiB, 0.0, 8 * kGiB,
       "non-torch memory (or the available KV cache) of a PP>1, TP=1 launch",
       [](const EngineProfile& p) { return static_cast<double>(p.non_torch_pipeline_only_bytes); },
       [](EngineProfile& p, double v) { p.non_torch_pipeline_only_bytes = to_bytes(v); }},
      {"non_torch_tensor_parallel_bytes", "non_torch", "bytes", 32 * kMiB, 0.0, 16 * kGiB,
       "non-torch memory (or the available KV cache) of a TP>1 launch",
       [](const EngineProfile& p) {
         return static_cast<double>(p.non_torch_tensor_parallel_bytes);
       },
       [](EngineProfile& p, double v) { p.non_torch_tensor_parallel_bytes = to_bytes(v); }},
      {"cuda_context_bytes", "context", "bytes", 32 * kMiB, 0.0, 4 * kGiB,
       "the free memory at startup (\"Free memory on device (X/Y GiB) on startup\")",
       [](const EngineProfile& p) { return static_cast<double>(p.cuda_context_bytes); },
       [](EngineProfile& p, double v) { p.cuda_context_bytes = to_bytes(v); }},
      {"nccl_communicator_bytes", "context", "bytes", 32 * kMiB, 0.0, 4 * kGiB,
       "the free memory at startup of a TP x PP > 1 launch",
       [](const EngineProfile& p) { return static_cast<double>(p.nccl_communicator_bytes); },
       [](EngineProfile& p, double v) { p.nccl_communicator_bytes = to_bytes(v); }},
      {"sampler_bytes_per_logit", "activation", "bytes per logit", 1.0, 0.0, 200.0,
       "an activation peak set by the sampler (max_num_seqs x vocab logits)",
       [](const EngineProfile& p) { return p.sampler_bytes_per_logit; },
       [](EngineProfile& p, double v) { p.sampler_bytes_per_logit = v; }},
      {"forward_hidden_buffers", "activation", "hidden-size buffers", 0.5, 0.0, 64.0,
       "an activation peak set by the forward pass (not the sampler)",
       [](const EngineProfile& p) { return p.forward_hidden_buffers; },
       [](EngineProfile& p, double v) { p.forward_hidden_buffers = v; }},
      {"cudagraph_pool_mib.base", "cudagraph", "MiB", 32.0, 0.0, 4096.0,
       "CUDA-graph memory of a launch that captures graphs (not enforce_eager)",
       [](const EngineProfile& p) { return p.cudagraph_base_mib; },
       [](EngineProfile& p, double v) { p.cudagraph_base_mib = v; }},
      {"cudagraph_pool_mib.piece", "cudagraph", "MiB", 0.02, 0.0, 8.0,
       "CUDA-graph memory of a launch that captures graphs (not enforce_eager)",
       [](const EngineProfile& p) { return p.cudagraph_piece_mib; },
       [](EngineProfile& p, double v) { p.cudagraph_piece_mib = v; }},
  }};
  return table;
}

// The measured terms, in report order. Figures are GiB except kv_tokens.
enum TermIndex : std::size_t {
  kActivation,
  kNonTorch,
  kCudagraph,
  kKvCache,
  kStartupFree,
  kKvTokens,
  kNumTerms
};
constexpr std::array<const char*, kNumTerms> kTermNames = {"activation_peak_gib", "non_torch_gib",
                                                           "cudagraph_gib",       "kv_cache_gib",
                                                           "startup_free_gib",    "kv_tokens"};

using Prediction = std::array<double, kNumTerms>;

std::array<std::optional<double>, kNumTerms> measured_terms(const MeasuredStartup& m) {
  auto gib = [](const std::optional<std::int64_t>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v) / kGiB;
  };
  std::array<std::optional<double>, kNumTerms> out;
  out[kActivation] = gib(m.activation_peak_bytes);
  out[kNonTorch] = gib(m.non_torch_bytes);
  out[kCudagraph] = gib(m.cudagraph_bytes);
  out[kKvCache] = gib(m.kv_cache_bytes);
  out[kStartupFree] = gib(m.startup_free_bytes);
  if (m.kv_tokens) out[kKvTokens] = static_cast<double>(*m.kv_tokens);
  return out;
}

// The row a launch is evaluated with: `profile` (the row under fit, `base` before it), or the
// launch's own row with the constants it shares with `base` taken from `profile`. A launch
// vLLM runs on its V0 fallback (a GPU below compute capability 8.0) has the V0 row as its own:
// the V1 row under fit never runs it.
EngineProfile row_for(const CalibrationSample& sample, const EngineProfile& profile,
                      const EngineProfile& base) {
  const bool fallback = !sample.own_row && runs_v0_fallback(base, sample.hardware.gpu);
  if (!sample.own_row && !fallback) return profile;
  EngineProfile row = fallback ? v0_fallback_profile(base) : *sample.own_row;
  for (const Constant& c : constants()) {
    if (c.get(row) == c.get(base)) c.set(row, c.get(profile));
  }
  return row;
}

// The planner's figures for one launch under `profile` (the first rank, as logs print them).
Prediction predict(const CalibrationSample& sample, const EngineProfile& profile,
                   const EngineProfile& base) {
  EngineConfig config = sample.config;
  config.profile = std::make_shared<const EngineProfile>(row_for(sample, profile, base));
  const CompiledLaunch launch(sample.spec, sample.hardware, config);
  const Breakdown b = launch.breakdown(launch_knobs(config));
  const RankBreakdown& rank = b.ranks.front();
  Prediction p{};
  p[kActivation] = static_cast<double>(rank.activation_peak_bytes) / kGiB;
  p[kNonTorch] = static_cast<double>(rank.non_torch_bytes) / kGiB;
  p[kCudagraph] = static_cast<double>(rank.cudagraph_bytes) / kGiB;
  p[kKvCache] = static_cast<double>(rank.kv_cache_bytes) / kGiB;
  const std::optional<std::int64_t>& estimate = sample.measured.cudagraph_estimate_bytes;
  if (estimate && !sample.held_out && b.profile().cudagraph_in_budget &&
      b.config.num_cudagraph_sizes > 0) {
    p[kKvCache] += static_cast<double>(rank.cudagraph_bytes - *estimate) / kGiB;
  }
  p[kStartupFree] = static_cast<double>(b.startup_free_bytes) / kGiB;
  p[kKvTokens] = static_cast<double>(b.kv_tokens);
  return p;
}

// One equation of the fit: a measured figure of one launch.
struct Row {
  std::size_t sample = 0;
  TermIndex term = kActivation;
  double measured = 0.0;
};

// The figures a launch contributes, each once: the available KV cache only when it carries a
// term the log does not print on its own (it is requested - weights - the printed terms).
std::vector<Row> rows_of(const std::vector<const CalibrationSample*>& fit,
                         const EngineProfile& base) {
  std::vector<Row> rows;
  for (std::size_t s = 0; s < fit.size(); ++s) {
    const auto m = measured_terms(fit[s]->measured);
    for (TermIndex t : {kActivation, kNonTorch, kCudagraph, kStartupFree}) {
      if (m[t]) rows.push_back({s, t, *m[t]});
    }
    const bool in_budget =
        fit[s]->own_row ? fit[s]->own_row->cudagraph_in_budget : base.cudagraph_in_budget;
    const bool graph_hidden = in_budget && !fit[s]->config.enforce_eager && !m[kCudagraph];
    if (m[kKvCache] && (!m[kActivation] || !m[kNonTorch] || graph_hidden)) {
      rows.push_back({s, kKvCache, *m[kKvCache]});
    }
  }
  return rows;
}

Eigen::VectorXd predicted_rows(const std::vector<const CalibrationSample*>& fit,
                               const std::vector<Row>& rows, const EngineProfile& profile,
                               const EngineProfile& base) {
  std::vector<Prediction> per_sample;
  per_sample.reserve(fit.size());
  for (const CalibrationSample* s : fit) per_sample.push_back(predict(*s, profile, base));
  Eigen::VectorXd out(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out(static_cast<Eigen::Index>(i)) = per_sample[rows[i].sample][rows[i].term];
  }
  return out;
}

std::string number_text(double v) {
  std::ostringstream out;
  out.precision(4);
  out << v;
  return out.str();
}

// Singular values of `a` (descending) and the right singular vectors.
struct Svd {
  Eigen::VectorXd values;
  Eigen::MatrixXd v;
};
Svd svd_of(const Eigen::MatrixXd& a) {
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinV);
  return {svd.singularValues(), svd.matrixV()};
}

// Standard errors (in tolerance units) of each column's coefficient: sqrt(diag((A^T A)^-1)).
Eigen::VectorXd scaled_standard_errors(const Svd& svd) {
  const Eigen::Index n = svd.values.size();
  Eigen::VectorXd out(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    double var = 0.0;
    for (Eigen::Index k = 0; k < n; ++k) {
      var += svd.v(j, k) * svd.v(j, k) / (svd.values(k) * svd.values(k));
    }
    out(j) = std::sqrt(var);
  }
  return out;
}

constexpr double kSingular = 1e-9;  // relative singular value below which columns are collinear

std::string fingerprint(const CalibrationSample& s) {
  std::ostringstream out;
  out << s.spec->id << '|' << s.hardware.gpu.total_memory_bytes << '|'
      << s.hardware.memory_used_by_others_bytes << '|';
  for (const KnobSpec& knob : knob_specs()) {
    const auto v = knob.get(s.config);
    out << knob.name << '=' << (v ? knob_value_text(*v) : "-") << ';';
  }
  for (const auto& m : measured_terms(s.measured)) out << (m ? number_text(*m) : "-") << ';';
  return out.str();
}

bool requested(const Constant& c, const std::vector<std::string>& terms) {
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const std::string& t) { return t == c.name || t == c.group; });
}

void check_terms(const std::vector<std::string>& terms) {
  for (const std::string& t : terms) {
    const bool known = std::any_of(constants().begin(), constants().end(),
                                   [&](const Constant& c) { return t == c.name || t == c.group; });
    if (!known) {
      std::string allowed = "context, non_torch, activation, cudagraph";
      for (const Constant& c : constants()) allowed += std::string(", ") + c.name;
      throw ConfigError("terms", "'" + t + "'", allowed, "unknown calibration term");
    }
  }
}

// The launches to fit on: held-out ones skipped, identical repeats dropped (they add no
// equation) and reported in result.duplicates; result.fitted_on names the rest.
std::vector<const CalibrationSample*> distinct_launches(
    const std::vector<CalibrationSample>& samples, CalibrationResult& result) {
  std::vector<const CalibrationSample*> fit;
  std::vector<std::string> prints;
  for (const CalibrationSample& s : samples) {
    if (!s.spec) throw ConfigError("samples", s.id, "a model spec", "launch without a model");
    if (s.held_out) continue;
    const std::string print = fingerprint(s);
    const auto same = std::find(prints.begin(), prints.end(), print);
    if (same != prints.end()) {
      result.duplicates.push_back(s.id + " repeats " +
                                  fit[static_cast<std::size_t>(same - prints.begin())]->id);
      continue;
    }
    prints.push_back(print);
    fit.push_back(&s);
    result.fitted_on.push_back(s.id);
  }
  return fit;
}

// A requested constant's prior, by constants() index.
struct Prior {
  double value = 0.0;
  double sigma = 0.0;
  std::string text;  // "value +- sigma unit (source)"
};
using Priors = std::array<std::optional<Prior>, kNumConstants>;

std::optional<std::size_t> constant_index(const std::string& name) {
  const auto& table = constants();
  for (std::size_t j = 0; j < kNumConstants; ++j) {
    if (name == table[j].name) return j;
  }
  return std::nullopt;
}

// The options' priors of requested constants, checked: a known constant once each, a finite
// value inside its plausible range, a positive sigma.
Priors priors_of(const CalibrationOptions& options) {
  const auto& table = constants();
  Priors out;
  for (std::size_t i = 0; i < options.priors.size(); ++i) {
    const CalibrationPrior& prior = options.priors[i];
    const std::string field = "priors[" + std::to_string(i) + "]";
    const auto j = constant_index(prior.name);
    if (!j) {
      std::string allowed;
      for (const Constant& c : table)
        allowed += (allowed.empty() ? "" : ", ") + std::string(c.name);
      throw ConfigError(field + ".name", "'" + prior.name + "'", allowed, "unknown constant");
    }
    const Constant& c = table[*j];
    if (out[*j]) throw ConfigError(field + ".name", prior.name, "once", "a second prior");
    if (!std::isfinite(prior.value) || prior.value < c.low || prior.value > c.high) {
      throw ConfigError(field + ".value", number_text(prior.value),
                        number_text(c.low) + " .. " + number_text(c.high) + " " + c.unit,
                        "outside the constant's plausible range");
    }
    if (!std::isfinite(prior.sigma) || !(prior.sigma > 0.0)) {
      throw ConfigError(field + ".sigma", number_text(prior.sigma), "> 0",
                        "a prior's standard deviation must be positive");
    }
    if (!requested(c, options.terms)) continue;
    // Bytes are shown in MiB, as the report shows them.
    const bool bytes = std::string(c.unit) == "bytes";
    const double scale = bytes ? kMiB : 1.0;
    const std::string unit = bytes ? "MiB" : c.unit;
    std::string text = number_text(prior.value / scale);
    text += " " + unit + " +- ";
    text += number_text(prior.sigma / scale);
    text += " " + unit;
    if (!prior.source.empty()) text += " (" + prior.source + ")";
    out[*j] = Prior{prior.value, prior.sigma, std::move(text)};
  }
  return out;
}

// The launches' equations `a` (columns: the constants `which`, in tolerance units) and
// residuals `r`, with one equation more per constant of `which` that has a prior:
// (value - constant) / sigma.
struct System {
  Eigen::MatrixXd a;
  Eigen::VectorXd r;
};
System with_priors(const Eigen::MatrixXd& a, const Eigen::VectorXd& r,
                   const std::vector<std::size_t>& which, const Priors& priors,
                   const EngineProfile& at) {
  const auto& table = constants();
  Eigen::Index extra = 0;
  for (std::size_t j : which) extra += priors[j] ? 1 : 0;
  System out{Eigen::MatrixXd::Zero(a.rows() + extra, a.cols()),
             Eigen::VectorXd::Zero(r.size() + extra)};
  out.a.topRows(a.rows()) = a;
  out.r.head(r.size()) = r;
  Eigen::Index row = a.rows();
  for (std::size_t k = 0; k < which.size(); ++k) {
    const std::optional<Prior>& prior = priors[which[k]];
    if (!prior) continue;
    const Constant& c = table[which[k]];
    out.a(row, static_cast<Eigen::Index>(k)) = c.tolerance / prior->sigma;
    out.r(row) = (prior->value - c.get(at)) / prior->sigma;
    ++row;
  }
  return out;
}

// The least-squares problem: one row per measured figure of the fitted launches, in
// measurement sigmas.
class Design {
 public:
  Design(std::vector<const CalibrationSample*> fit, const EngineProfile& base, double sigma,
         double cudagraph_sigma)
      : fit_(std::move(fit)), base_(base), rows_(rows_of(fit_, base)), sigma_(size()) {
    for (Eigen::Index i = 0; i < size(); ++i) {
      sigma_(i) = rows_[static_cast<std::size_t>(i)].term == kCudagraph ? cudagraph_sigma : sigma;
    }
  }

  bool empty() const { return rows_.empty(); }
  Eigen::Index size() const { return static_cast<Eigen::Index>(rows_.size()); }

  Eigen::VectorXd measured() const {
    Eigen::VectorXd out(size());
    for (Eigen::Index i = 0; i < size(); ++i) out(i) = rows_[static_cast<std::size_t>(i)].measured;
    return out;
  }
  Eigen::VectorXd predicted(const EngineProfile& profile) const {
    return predicted_rows(fit_, rows_, profile, base_);
  }
  // Each figure's standard deviation (GiB), by its term.
  const Eigen::VectorXd& sigma() const { return sigma_; }

  // Column k: how each figure moves (in measurement sigmas) when constant which[k] moves by
  // its tolerance. Scaled so that a standard error of 1 is exactly the tolerance.
  Eigen::MatrixXd columns(const EngineProfile& at, const std::vector<std::size_t>& which,
                          const Eigen::VectorXd& at_rows) const {
    const auto& table = constants();
    Eigen::MatrixXd a(size(), static_cast<Eigen::Index>(which.size()));
    for (std::size_t k = 0; k < which.size(); ++k) {
      const Constant& c = table[which[k]];
      EngineProfile moved = at;
      c.set(moved, c.get(at) + c.tolerance);
      a.col(static_cast<Eigen::Index>(k)) = (predicted(moved) - at_rows).cwiseQuotient(sigma_);
    }
    return a;
  }

 private:
  std::vector<const CalibrationSample*> fit_;
  EngineProfile base_;  // the row under fit as given: which constants another row shares
  std::vector<Row> rows_;
  Eigen::VectorXd sigma_;
};

// Which of the wanted constants (indices into constants()) the launches identify, in priority
// order: their indices into `wanted`; status[j] says why constant j is not. `data`: the
// launches' columns at `at`. A constant no launch exercises is not fitted (its packaged value
// stands); an exercised one with a prior is always identified (its prior bounds it); the others
// are judged with the priors' equations beside the launches'.
std::vector<std::size_t> identified(const Eigen::MatrixXd& data,
                                    const std::vector<std::size_t>& wanted, const Priors& priors,
                                    bool take_prior, const EngineProfile& at,
                                    std::vector<std::string>& status) {
  const auto& table = constants();
  const Eigen::MatrixXd all =
      with_priors(data, Eigen::VectorXd::Zero(data.rows()), wanted, priors, at).a;
  std::vector<std::size_t> accepted;
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    const Constant& c = table[wanted[k]];
    const bool exercised = data.col(static_cast<Eigen::Index>(k)).cwiseAbs().maxCoeff() >= 1e-3;
    if (!exercised && !(take_prior && priors[wanted[k]])) {
      // Nothing the logs show moves it: the packaged row's value stands, prior or not (a prior
      // is a belief about the constant, the row a fit to measured launches of this release).
      status[wanted[k]] = priors[wanted[k]]
                              ? std::string("kept at the packaged value (no log measures ") +
                                    c.exercised_by + "; its prior " + priors[wanted[k]]->text +
                                    " is not used alone)"
                              : std::string("not exercised: no log measures ") + c.exercised_by;
      continue;
    }
    if (priors[wanted[k]]) {
      status[wanted[k]] = exercised ? "fitted from its prior " + priors[wanted[k]]->text
                                    : std::string("its prior only (no log measures ") +
                                          c.exercised_by + "): " + priors[wanted[k]]->text;
      accepted.push_back(k);
      continue;
    }
    std::vector<std::size_t> trial = accepted;
    trial.push_back(k);
    Eigen::MatrixXd a(all.rows(), static_cast<Eigen::Index>(trial.size()));
    for (std::size_t t = 0; t < trial.size(); ++t) {
      a.col(static_cast<Eigen::Index>(t)) = all.col(static_cast<Eigen::Index>(trial[t]));
    }
    const Svd svd = svd_of(a);
    const Eigen::Index last = svd.values.size() - 1;
    if (svd.values(last) <= kSingular * svd.values(0)) {
      // The null direction names the constants it mixes.
      std::string with;
      for (std::size_t t = 0; t + 1 < trial.size(); ++t) {
        if (std::abs(svd.v(static_cast<Eigen::Index>(t), last)) > 1e-3) {
          with += (with.empty() ? "" : ", ") + std::string(table[wanted[trial[t]]].name);
        }
      }
      status[wanted[k]] = "not identified: collinear with " + with +
                          " (the logs vary nothing that tells them apart)";
      continue;
    }
    Eigen::VectorXd se = scaled_standard_errors(svd);
    for (std::size_t t = 0; t < trial.size(); ++t) {
      if (priors[wanted[trial[t]]]) se(static_cast<Eigen::Index>(t)) = 0.0;  // bounded by it
    }
    const Eigen::Index self = static_cast<Eigen::Index>(trial.size()) - 1;
    Eigen::Index worst = 0;
    se.maxCoeff(&worst);
    if (se(worst) > 1.0) {
      const Constant& w = table[wanted[trial[static_cast<std::size_t>(worst)]]];
      status[wanted[k]] =
          "not identified: the logs leave it uncertain by +-" +
          number_text(se(self) * c.tolerance) + " " + c.unit + " (tolerance " +
          number_text(c.tolerance) + ")" +
          (worst == self ? std::string() : std::string(" and would blur ") + w.name);
      continue;
    }
    accepted.push_back(k);
  }
  return accepted;
}

// Requested terms that stay unidentified are errors; so is a fit of nothing.
void require_identified(const std::vector<std::string>& terms,
                        const std::vector<std::size_t>& wanted,
                        const std::vector<std::size_t>& free,
                        const std::vector<std::string>& status) {
  const auto& table = constants();
  std::vector<std::string> missing;
  std::string why;
  for (const std::string& t : terms) {
    for (std::size_t j = 0; j < kNumConstants; ++j) {
      const Constant& c = table[j];
      const bool named = t == c.name;
      const bool group_missed =
          t == c.group && std::none_of(free.begin(), free.end(),
                                       [&](std::size_t f) { return table[f].group == t; });
      const bool fitted = std::find(free.begin(), free.end(), j) != free.end();
      if ((named && !fitted) || group_missed) {
        missing.emplace_back(c.name);
        why += std::string(why.empty() ? "" : "; ") + c.name + " " + status[j];
      }
    }
  }
  if (free.empty() && missing.empty()) {
    for (std::size_t j : wanted) {
      missing.emplace_back(table[j].name);
      why += std::string(why.empty() ? "" : "; ") + table[j].name + " " + status[j];
    }
  }
  if (!missing.empty()) throw CalibrationError(missing, why);
}

// Bounded Gauss-Newton from `start` over the `free` constants, with their priors' equations:
// solve, clamp what leaves its plausible range (then held there), re-linearise (the activation
// peak is max(forward, sampler)) until the step is negligible, 20 iterations at most.
struct GaussNewton {
  EngineProfile profile;
  Eigen::VectorXd rows;        // the predicted figures at `profile`
  std::vector<bool> at_bound;  // per constant
  int iterations = 0;
};
GaussNewton gauss_newton(const Design& design, const EngineProfile& start,
                         const Eigen::VectorXd& start_rows, const std::vector<std::size_t>& free,
                         const Priors& priors) {
  const auto& table = constants();
  const Eigen::VectorXd measured = design.measured();
  GaussNewton out{start, start_rows, std::vector<bool>(kNumConstants, false), 0};
  for (out.iterations = 1; out.iterations <= 20; ++out.iterations) {
    std::vector<std::size_t> active;
    for (std::size_t j : free) {
      if (!out.at_bound[j]) active.push_back(j);
    }
    if (active.empty()) break;
    const System system = with_priors(design.columns(out.profile, active, out.rows),
                                      (measured - out.rows).cwiseQuotient(design.sigma()), active,
                                      priors, out.profile);
    const Eigen::VectorXd step = system.a.colPivHouseholderQr().solve(system.r);
    bool clamped = false;
    for (std::size_t k = 0; k < active.size(); ++k) {
      const Constant& c = table[active[k]];
      const double value = c.get(out.profile) + step(static_cast<Eigen::Index>(k)) * c.tolerance;
      const double bounded = std::clamp(value, c.low, c.high);
      if (bounded != value) {
        out.at_bound[active[k]] = true;
        clamped = true;
      }
      c.set(out.profile, bounded);
    }
    out.rows = design.predicted(out.profile);
    if (!clamped && step.cwiseAbs().maxCoeff() < 1e-6) break;
  }
  out.iterations = std::min(out.iterations, 20);
  return out;
}

// Every constant before and after, with its standard error and conditioning at the fitted
// point over the constants left free.
void report_constants(const Design& design, const EngineProfile& base, const GaussNewton& fitted,
                      const std::vector<std::size_t>& free, const Priors& priors,
                      const std::vector<std::string>& status, const std::vector<std::string>& terms,
                      CalibrationResult& result) {
  const auto& table = constants();
  std::vector<std::size_t> final_free;
  for (std::size_t j : free) {
    if (!fitted.at_bound[j]) final_free.push_back(j);
  }
  Eigen::VectorXd se;
  if (!final_free.empty()) {
    const Eigen::MatrixXd data = design.columns(fitted.profile, final_free, fitted.rows);
    const Svd svd = svd_of(
        with_priors(data, Eigen::VectorXd::Zero(data.rows()), final_free, priors, fitted.profile)
            .a);
    se = scaled_standard_errors(svd);
    result.condition_number = svd.values(0) / svd.values(svd.values.size() - 1);
  }
  for (std::size_t j = 0; j < kNumConstants; ++j) {
    const Constant& c = table[j];
    FittedConstant f;
    f.name = c.name;
    f.unit = c.unit;
    f.before = c.get(base);
    f.after = c.get(fitted.profile);
    f.fitted = std::find(free.begin(), free.end(), j) != free.end();
    f.status = status[j];
    if (f.fitted) {
      const auto it = std::find(final_free.begin(), final_free.end(), j);
      if (it == final_free.end()) {
        f.status = "fitted, at the plausible bound " + number_text(f.after) + " " + c.unit;
      } else {
        f.standard_error = se(static_cast<Eigen::Index>(it - final_free.begin())) * c.tolerance;
        f.status = priors[j] ? status[j] : "fitted";
      }
    } else if (!requested(c, terms)) {
      f.status = "not requested";
    }
    result.constants.push_back(f);
  }
}

// Every measured figure of every launch (held out and repeats too), before and after.
void report_errors(const std::vector<CalibrationSample>& samples, const EngineProfile& base,
                   const EngineProfile& fitted, CalibrationResult& result) {
  for (const CalibrationSample& s : samples) {
    const Prediction before = predict(s, base, base);
    const Prediction after = predict(s, fitted, base);
    const auto m = measured_terms(s.measured);
    for (std::size_t t = 0; t < kNumTerms; ++t) {
      if (!m[t]) continue;
      result.errors.push_back({s.id, kTermNames[t], *m[t], before[t], after[t], s.held_out});
    }
  }
}

}  // namespace

CalibrationResult calibrate(const EngineProfile& base,
                            const std::vector<CalibrationSample>& samples,
                            const CalibrationOptions& options) {
  check_terms(options.terms);
  if (!(options.measurement_sigma_gib > 0.0)) {
    throw ConfigError("measurement_sigma_gib", number_text(options.measurement_sigma_gib), "> 0",
                      "the measurement resolution must be positive");
  }
  if (!(options.cudagraph_sigma_gib >= 0.0)) {
    throw ConfigError("cudagraph_sigma_gib", number_text(options.cudagraph_sigma_gib), ">= 0",
                      "0 weighs CUDA-graph figures like the others");
  }
  const auto& table = constants();
  const Priors priors = priors_of(options);
  const bool any_prior =
      std::any_of(priors.begin(), priors.end(), [](const auto& p) { return p.has_value(); });
  CalibrationResult result;
  result.profile = base;
  std::vector<const CalibrationSample*> fit = distinct_launches(samples, result);
  std::vector<std::size_t> wanted;
  std::vector<std::string> wanted_names;
  for (std::size_t j = 0; j < kNumConstants; ++j) {
    if (requested(table[j], options.terms)) {
      wanted.push_back(j);
      wanted_names.emplace_back(table[j].name);
    }
  }
  if (fit.size() < (any_prior ? 1U : 2U)) {
    throw CalibrationError(
        wanted_names,
        std::to_string(fit.size()) + " distinct launch" + (fit.size() == 1 ? "" : "es") +
            (result.duplicates.empty() ? "" : " (identical logs count once)") +
            (any_prior
                 ? std::string(" to fit from the priors; give one or more launches")
                 : std::string(" give at most one equation per term; give two or more launches "
                               "that differ (tensor/pipeline parallel size, model, max_num_seqs "
                               "or max_num_batched_tokens)")));
  }
  const double cudagraph_sigma = options.cudagraph_sigma_gib > 0.0 ? options.cudagraph_sigma_gib
                                                                   : options.measurement_sigma_gib;
  const Design design(std::move(fit), base, options.measurement_sigma_gib, cudagraph_sigma);
  if (design.empty()) {
    throw CalibrationError(wanted_names,
                           "the logs print no activation, non-torch, CUDA-graph, KV cache or "
                           "startup free-memory figure");
  }

  // The fit starts where the priors put their constants.
  EngineProfile start = base;
  for (std::size_t j = 0; j < kNumConstants; ++j) {
    if (priors[j]) table[j].set(start, priors[j]->value);
  }
  const Eigen::VectorXd start_rows = design.predicted(start);
  std::vector<std::string> status(kNumConstants, "not requested");
  const std::vector<std::size_t> accepted =
      identified(design.columns(start, wanted, start_rows), wanted, priors,
                 options.unexercised_take_prior, start, status);
  std::vector<std::size_t> free;
  free.reserve(accepted.size());
  for (std::size_t k : accepted) free.push_back(wanted[k]);
  require_identified(options.terms, wanted, free, status);
  // A prior's constant the logs leave unfitted goes back to the packaged value.
  bool reset = false;
  for (std::size_t j = 0; j < kNumConstants; ++j) {
    if (priors[j] && std::find(free.begin(), free.end(), j) == free.end()) {
      table[j].set(start, table[j].get(base));
      reset = true;
    }
  }
  const GaussNewton fitted =
      gauss_newton(design, start, reset ? design.predicted(start) : start_rows, free, priors);
  result.iterations = fitted.iterations;
  result.profile = fitted.profile;
  report_constants(design, base, fitted, free, priors, status, options.terms, result);
  report_errors(samples, base, fitted.profile, result);
  return result;
}

std::vector<CalibrationPrior> parse_calibration_priors(const std::string& yaml_text,
                                                       const std::string& file,
                                                       const std::string& engine_version) {
  YAML::Node root = load_yaml_checked(yaml_text, file);
  if (!root.IsMap() || root.size() != 1 || !root["rows"] || !root["rows"].IsSequence()) {
    throw SpecError(file, "<document>", "not {rows: [...]}", "expected a map with a rows list");
  }
  if (!vllm_version_at_least(engine_version, engine_version)) {
    throw ConfigError("engine_version", "'" + engine_version + "'", "<major>.<minor>[.<patch>]",
                      "not a vLLM version");
  }
  const YAML::Node rows = root["rows"];
  std::array<std::optional<CalibrationPrior>, kNumConstants> in_effect;
  std::string previous;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string where = "rows[" + std::to_string(i) + "]";
    const YAML::Node row = rows[i];
    if (!row.IsMap()) throw SpecError(file, where, "not a map", "expected a row map");
    const YAML::Node from = row["from_version"];
    if (!from || !from.IsScalar()) {
      throw SpecError(file, where + ".from_version", "missing", "every row names its version");
    }
    const auto readable = vllm_version_at_least(from.Scalar(), from.Scalar());
    if (!readable) {
      throw SpecError(file, where + ".from_version", from.Scalar(),
                      "expected <major>.<minor>[.<patch>]");
    }
    if (!previous.empty() && !vllm_version_at_least(from.Scalar(), previous).value_or(false)) {
      throw SpecError(file, where + ".from_version", from.Scalar(),
                      "rows must be in ascending version order");
    }
    previous = from.Scalar();
    const bool applies = vllm_version_at_least(engine_version, from.Scalar()).value_or(false);
    for (const auto& entry : row) {
      const std::string key = entry.first.Scalar();
      if (key == "from_version") continue;
      std::string field = where;
      field += ".";
      field += key;
      const auto j = constant_index(key);
      if (!j) throw SpecError(file, field, key, "not a calibrated constant");
      const YAML::Node& prior = entry.second;
      if (!prior.IsMap() || prior.size() != 3 || !prior["value"] || !prior["sigma"] ||
          !prior["source"]) {
        throw SpecError(file, field, "not {value, sigma, source}",
                        "a prior is a value, its standard deviation and its source");
      }
      CalibrationPrior out;
      out.name = key;
      for (const char* part : {"value", "sigma"}) {
        const YAML::Node number = prior[part];
        double v = 0.0;
        if (!number.IsScalar() || !YAML::convert<double>::decode(number, v) || !std::isfinite(v)) {
          throw SpecError(file, field + "." + part, number.IsScalar() ? number.Scalar() : "?",
                          "expected a number");
        }
        (std::string(part) == "value" ? out.value : out.sigma) = v;
      }
      if (!prior["source"].IsScalar() || prior["source"].Scalar().empty()) {
        throw SpecError(file, field + ".source", "empty", "every prior names where it comes from");
      }
      // The same checks calibrate() makes, said here with the file's field.
      const Constant& c = constants()[*j];
      if (out.value < c.low || out.value > c.high) {
        throw SpecError(file, field + ".value", number_text(out.value),
                        "outside the constant's plausible range " + number_text(c.low) + " .. " +
                            number_text(c.high) + " " + c.unit);
      }
      if (!(out.sigma > 0.0)) {
        throw SpecError(file, field + ".sigma", number_text(out.sigma),
                        "a prior's standard deviation must be positive");
      }
      out.source = prior["source"].Scalar();
      if (applies) in_effect[*j] = std::move(out);
    }
  }
  std::vector<CalibrationPrior> out;
  for (auto& prior : in_effect) {
    if (prior) out.push_back(std::move(*prior));
  }
  return out;
}

std::string calibration_profile_yaml(const CalibrationResult& result,
                                     const std::string& engine_version, const std::string& gpu) {
  YAML::Emitter out;
  out.SetDoublePrecision(8);
  out << YAML::Comment(
      "vramplan calibration profile: fitted constants over the engines.yaml row of "
      "engine_version (apply with --profile or vramplan.Profile.load)");
  out << YAML::BeginMap;
  out << YAML::Key << "engine_version" << YAML::Value << YAML::DoubleQuoted << engine_version;
  out << YAML::Key << "gpu" << YAML::Value << YAML::DoubleQuoted << gpu;
  out << YAML::Key << "fitted_on" << YAML::Value << YAML::BeginSeq;
  for (const std::string& id : result.fitted_on) out << YAML::DoubleQuoted << id;
  out << YAML::EndSeq;
  out << YAML::Key << "overrides" << YAML::Value << YAML::BeginMap;
  bool graph = false;
  for (const FittedConstant& c : result.constants) {
    if (!c.fitted) continue;
    if (c.name.rfind("cudagraph_pool_mib.", 0) == 0) {
      graph = true;
    } else if (c.unit == std::string("bytes")) {
      out << YAML::Key << c.name << YAML::Value << static_cast<std::int64_t>(std::llround(c.after));
    } else {
      out << YAML::Key << c.name << YAML::Value << c.after;
    }
  }
  if (graph) {
    // The pool's map is read whole: fitted and kept coefficients together.
    const EngineProfile& p = result.profile;
    out << YAML::Key << "cudagraph_pool_mib" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "base" << YAML::Value << p.cudagraph_base_mib;
    out << YAML::Key << "piece" << YAML::Value << p.cudagraph_piece_mib;
    out << YAML::Key << "piece_moe" << YAML::Value << p.cudagraph_piece_mib_moe;
    out << YAML::Key << "piece_mla" << YAML::Value << p.cudagraph_piece_mib_mla;
    out << YAML::Key << "piece_mxfp4_moe" << YAML::Value << p.cudagraph_piece_mib_mxfp4_moe;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "fit" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "condition_number" << YAML::Value << result.condition_number;
  out << YAML::Key << "constants" << YAML::Value << YAML::BeginMap;
  for (const FittedConstant& c : result.constants) {
    out << YAML::Key << c.name << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "before" << YAML::Value << c.before;
    out << YAML::Key << "after" << YAML::Value << c.after;
    out << YAML::Key << "standard_error" << YAML::Value << c.standard_error;
    out << YAML::Key << "status" << YAML::Value << YAML::DoubleQuoted << c.status;
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

CalibrationProfile parse_calibration_profile(const std::string& yaml_text,
                                             const std::string& file) {
  YAML::Node root = load_yaml_checked(yaml_text, file);
  if (!root.IsMap()) throw SpecError(file, "<document>", "not a map", "expected a profile map");
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (key != "engine_version" && key != "gpu" && key != "fitted_on" && key != "overrides" &&
        key != "fit") {
      throw SpecError(file, key, key,
                      "unknown profile field (expected engine_version, gpu, fitted_on, "
                      "overrides, fit)");
    }
  }
  CalibrationProfile out;
  const YAML::Node version = root["engine_version"];
  if (!version || !version.IsScalar() || version.Scalar().empty()) {
    throw SpecError(file, "engine_version", version ? "not a version" : "missing",
                    "the vLLM version the profile was fitted for is required");
  }
  out.engine_version = version.Scalar();
  const YAML::Node gpu = root["gpu"];
  if (gpu) {
    if (!gpu.IsScalar()) throw SpecError(file, "gpu", "not text", "expected the GPU's name");
    out.gpu = gpu.Scalar();
  }
  const YAML::Node fitted_on = root["fitted_on"];
  if (fitted_on) {
    if (!fitted_on.IsSequence()) {
      throw SpecError(file, "fitted_on", "not a list", "expected a list of launch ids");
    }
    for (std::size_t i = 0; i < fitted_on.size(); ++i) {
      if (!fitted_on[i].IsScalar()) {
        throw SpecError(file, "fitted_on[" + std::to_string(i) + "]", "not text",
                        "expected a launch id");
      }
      out.fitted_on.push_back(fitted_on[i].Scalar());
    }
  }
  try {
    out.profile = apply_profile_overrides(engine_profile(out.engine_version), yaml_text, file);
  } catch (const ConfigError& e) {
    throw SpecError(file, "engine_version", out.engine_version, e.what());
  }
  return out;
}

}  // namespace vramplan
