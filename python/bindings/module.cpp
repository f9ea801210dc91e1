// vramplan._core: thin bindings on one flat module, registered by C++ area (register_*.cpp).
// Results cross the boundary as the bound C++ types (Breakdown, Plan, EngineProfile, ...) or,
// where none is bound, as dicts built from the C++ JSON renderers: Python never re-derives a
// number.
#include <pybind11/pybind11.h>

#include "register.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "vramplan C++ core";
  vramplan_py::register_errors(m);
  vramplan_py::register_spec(m);
  vramplan_py::register_version(m);
  vramplan_py::register_workload(m);  // before the engine: Launch.solve takes a Workload
  vramplan_py::register_engine(m);
  vramplan_py::register_engine_calls(m);
  vramplan_py::register_readers(m);
  vramplan_py::register_diagnose(m);
  vramplan_py::register_calibrate(m);
  vramplan_py::register_colocate(m);
  vramplan_py::register_band(m);
  vramplan_py::register_fit(m);  // after the band: fit_options takes an ErrorBandTable
  vramplan_py::register_sglang(m);
  vramplan_py::register_llamacpp(m);
}
