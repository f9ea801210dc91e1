// vramplan._core.diagnose_sglang_launch: SGLang's failed-launch diagnosis, result as a dict.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

#include "register.hpp"
#include "vramplan/sglang_diagnose.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_sglang_diagnose(py::module_& m) {
  m.def(
      "diagnose_sglang_launch",
      [](const std::string& log_text) {
        std::string dumped;
        {
          // Diagnosing touches no Python object: let other threads run meanwhile.
          py::gil_scoped_release release;
          // Log bytes are untrusted: invalid UTF-8 left in a line becomes U+FFFD.
          dumped = vramplan::to_json(vramplan::diagnose_sglang_launch(log_text))
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
        return py::module_::import("json").attr("loads")(dumped);
      },
      py::arg("log_text"),
      "Name the cause of a failed SGLang launch from its startup log (kernel OOM-killer lines "
      "pasted into it count). Returns a dict: engine, cause (fixed vocabulary), explanation, "
      "advice ([{knob, flag, action, value, why}] under SGLang's ServerArgs names and flags), "
      "error_lines, figures (parse_sglang_log's dict). Never raises for malformed text.");
}

}  // namespace vramplan_py
