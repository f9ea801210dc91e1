// Colocation: what a started instance holds, for the startup checks of those started after it.
#include "register.hpp"
#include "vramplan/colocate.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_colocate(py::module_& m) {
  m.def("resident_bytes", &vramplan::resident_bytes, py::arg("started"),
        "What a started instance holds on its fullest GPU while serving (bytes): what the "
        "startup check of an instance started after it on the same GPUs counts as used.");
}

}  // namespace vramplan_py
