// vramplan._core error bands: a launch's (GPU family x era) row of model_specs/error_bands.json
// and the safety margin it implies, looked up in C++ so that `plan` solves once.
#include <pybind11/stl.h>

#include <string>

#include "register.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/error_band.hpp"
#include "vramplan/solver.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_band(py::module_& m) {
  using vramplan::ErrorBand;
  using vramplan::ErrorBandTable;
  py::class_<ErrorBand>(m, "ErrorBand",
                        "The expected available-KV error of a launch's (GPU family x era).")
      .def_readonly("group", &ErrorBand::group)
      .def_readonly("held_out_records", &ErrorBand::held_out_records)
      .def_readonly("band_bytes", &ErrorBand::band_bytes)
      .def_readonly("over_prediction_bytes", &ErrorBand::over_prediction_bytes)
      .def_readonly("statement", &ErrorBand::statement)
      .def_property_readonly(
          "safety_margin_bytes",
          [](const ErrorBand& band) {
            return vramplan::safety_margin_with_band(band, vramplan::kDefaultSafetyMarginBytes);
          },
          "The solver's margin for this band: the largest held-out over-prediction where it "
          "exceeds the default margin, else the default.")
      .def("to_json", [](const ErrorBand& band) { return vramplan::to_json(band).dump(); })
      .def("to_dict", [](const ErrorBand& band) { return to_python(vramplan::to_json(band)); });

  py::class_<ErrorBandTable>(m, "ErrorBandTable", "model_specs/error_bands.json, read once.")
      .def_static("load_file", &ErrorBandTable::load_file, py::arg("path"))
      .def(
          "lookup",
          [](const ErrorBandTable& table, const vramplan::CompiledLaunch& launch) {
            return table.lookup(launch);
          },
          py::arg("launch"));
  m.def(
      "error_band_era",
      [](const std::string& version) {
        return std::string(vramplan::error_band_era(vramplan::engine_profile(version).era));
      },
      py::arg("version"),
      "The era of a vLLM release's engines.yaml row as the error bands name it (V0, v1-early, "
      "v1, v1-latest); ConfigError below the oldest row.");
}

}  // namespace vramplan_py
