// vramplan._core.calibrate: the least-squares fit of an engine row's constants to measured
// startups, and the profile YAML it writes and reads. Launches cross as compiled `Launch`
// objects (their spec, GPU and knobs); results as plain dicts.
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "register.hpp"
#include "vramplan/calibrate.hpp"
#include "vramplan/compiled.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

PyObject* g_calibration_error = nullptr;

std::optional<std::int64_t> bytes_of(const py::dict& measured, const char* key) {
  if (!measured.contains(key) || measured[key].is_none()) return std::nullopt;
  return measured[key].cast<std::int64_t>();
}

nlohmann::json result_json(const vramplan::CalibrationResult& r) {
  nlohmann::json out;
  out["fitted_on"] = r.fitted_on;
  out["duplicates"] = r.duplicates;
  out["condition_number"] = r.condition_number;
  out["iterations"] = r.iterations;
  out["constants"] = nlohmann::json::array();
  for (const auto& c : r.constants) {
    out["constants"].push_back({{"name", c.name},
                                {"unit", c.unit},
                                {"before", c.before},
                                {"after", c.after},
                                {"standard_error", c.standard_error},
                                {"fitted", c.fitted},
                                {"status", c.status}});
  }
  out["errors"] = nlohmann::json::array();
  for (const auto& e : r.errors) {
    out["errors"].push_back({{"id", e.sample_id},
                             {"term", e.term},
                             {"measured", e.measured},
                             {"before", e.predicted_before},
                             {"after", e.predicted_after},
                             {"held_out", e.held_out}});
  }
  return out;
}

}  // namespace

void register_calibrate(py::module_& m) {
  g_calibration_error =
      py::exception<vramplan::CalibrationError>(m, "CalibrationError", m.attr("Error").ptr())
          .release()
          .ptr();
  // Registered after the generic translator, so tried first: keeps the named terms.
  // pybind11's translator type takes the exception_ptr by value.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const vramplan::CalibrationError& e) {
      py::object exc = py::handle(g_calibration_error)(e.what());
      exc.attr("terms") = py::cast(e.terms());
      PyErr_SetObject(g_calibration_error, exc.ptr());
    }
  });

  m.def(
      "calibrate",
      [](const vramplan::EngineProfile& base, const py::list& samples,
         const std::string& engine_version, const std::string& gpu,
         const std::vector<std::string>& terms, double measurement_sigma_gib,
         double cudagraph_sigma_gib, const py::list& priors, bool unexercised_take_prior) {
        std::vector<vramplan::CalibrationSample> in;
        for (const py::handle& item : samples) {
          const auto entry = item.cast<py::dict>();
          const auto& launch = entry["launch"].cast<const vramplan::CompiledLaunch&>();
          vramplan::CalibrationSample s;
          s.id = entry["id"].cast<std::string>();
          s.spec = launch.spec_ptr();
          s.hardware = launch.hardware();
          s.config = launch.config();
          s.held_out = entry.contains("held_out") && entry["held_out"].cast<bool>();
          if (entry.contains("own_row") && entry["own_row"].cast<bool>()) {
            s.own_row = std::make_shared<const vramplan::EngineProfile>(launch.profile());
          }
          const auto measured = entry["measured"].cast<py::dict>();
          s.measured.activation_peak_bytes = bytes_of(measured, "activation_peak_bytes");
          s.measured.non_torch_bytes = bytes_of(measured, "non_torch_bytes");
          s.measured.cudagraph_bytes = bytes_of(measured, "cudagraph_bytes");
          s.measured.kv_cache_bytes = bytes_of(measured, "kv_cache_bytes");
          s.measured.cudagraph_estimate_bytes = bytes_of(measured, "cudagraph_estimate_bytes");
          s.measured.startup_free_bytes = bytes_of(measured, "startup_free_bytes");
          s.measured.kv_tokens = bytes_of(measured, "kv_tokens");
          in.push_back(std::move(s));
        }
        vramplan::CalibrationOptions options;
        options.terms = terms;
        options.measurement_sigma_gib = measurement_sigma_gib;
        options.cudagraph_sigma_gib = cudagraph_sigma_gib;
        options.unexercised_take_prior = unexercised_take_prior;
        for (const py::handle& item : priors) {
          const auto entry = item.cast<py::dict>();
          vramplan::CalibrationPrior prior;
          prior.name = entry["name"].cast<std::string>();
          prior.value = entry["value"].cast<double>();
          prior.sigma = entry["sigma"].cast<double>();
          if (entry.contains("source")) prior.source = entry["source"].cast<std::string>();
          options.priors.push_back(std::move(prior));
        }
        vramplan::CalibrationResult result;
        {
          py::gil_scoped_release release;
          result = vramplan::calibrate(base, in, options);
        }
        return py::make_tuple(result.profile, to_python(result_json(result)),
                              vramplan::calibration_profile_yaml(result, engine_version, gpu));
      },
      py::arg("base"), py::arg("samples"), py::arg("engine_version"), py::arg("gpu"),
      py::arg("terms") = std::vector<std::string>{},
      py::arg("measurement_sigma_gib") = vramplan::CalibrationOptions{}.measurement_sigma_gib,
      py::arg("cudagraph_sigma_gib") = vramplan::CalibrationOptions{}.cudagraph_sigma_gib,
      py::arg("priors") = py::list(),
      py::arg("unexercised_take_prior") = vramplan::CalibrationOptions{}.unexercised_take_prior,
      "Fit `base`'s constants to measured launches: samples are dicts {id, launch (a Launch), "
      "measured: {activation_peak_bytes, non_torch_bytes, cudagraph_bytes, kv_cache_bytes, "
      "startup_free_bytes, kv_tokens}, held_out, own_row (evaluate with the launch's own engine "
      "row, sharing the constants it has in common with `base`)}; priors dicts {name, value, "
      "sigma, source} "
      "(a maximum a posteriori fit); cudagraph_sigma_gib weighs CUDA-graph figures apart (0: "
      "like the others); unexercised_take_prior: a constant no launch exercises takes its prior "
      "instead of base's value (leave-one-source-out). Returns (EngineProfile, report dict, "
      "profile YAML naming "
      "engine_version and gpu).");
  m.def(
      "parse_calibration_priors",
      [](const std::string& yaml_text, const std::string& file, const std::string& version) {
        py::list out;
        for (const vramplan::CalibrationPrior& p :
             vramplan::parse_calibration_priors(yaml_text, file, version)) {
          py::dict d;
          d["name"] = p.name;
          d["value"] = p.value;
          d["sigma"] = p.sigma;
          d["source"] = p.source;
          out.append(d);
        }
        return out;
      },
      py::arg("yaml_text"), py::arg("file"), py::arg("engine_version"),
      "The priors in effect at engine_version from a priors document "
      "(model_specs/calibration_priors.yaml): a list of {name, value, sigma, source}.");
  m.def(
      "parse_calibration_profile",
      [](const std::string& yaml_text, const std::string& file) {
        const vramplan::CalibrationProfile p = vramplan::parse_calibration_profile(yaml_text, file);
        py::dict out;
        out["engine_version"] = p.engine_version;
        out["gpu"] = p.gpu;
        out["fitted_on"] = p.fitted_on;
        out["profile"] = p.profile;
        return out;
      },
      py::arg("yaml_text"), py::arg("file"),
      "Read a calibration profile: {engine_version, gpu, fitted_on, profile (EngineProfile)}.");
}

}  // namespace vramplan_py
