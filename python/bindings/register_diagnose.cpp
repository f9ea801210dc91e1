// vramplan._core.diagnose_launch: the failed-launch cause classifier, result as a plain dict.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

#include "register.hpp"
#include "vramplan/diagnose.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_diagnose(py::module_& m) {
  m.def(
      "diagnose_launch",
      [](const std::string& log_text, const std::string& kernel_text) {
        std::string dumped;
        {
          // Classifying touches no Python object: let other threads run meanwhile.
          py::gil_scoped_release release;
          // Log bytes are untrusted: invalid UTF-8 in the parser's lines becomes U+FFFD.
          dumped = vramplan::to_json(vramplan::diagnose_launch(log_text, kernel_text))
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
        return py::module_::import("json").attr("loads")(dumped);
      },
      py::arg("log_text"), py::arg("kernel_text") = std::string(),
      "Name the cause of a failed vLLM launch from its log and an optional dmesg/journalctl "
      "excerpt. Returns a dict: cause (fixed vocabulary), evidence (lines), explanation, "
      "advice ([{knob, action, value}]), oom_phase, oom_other_processes_bytes, oom_kills, figures "
      "(parse_vllm_log's dict). Never "
      "raises for malformed text.");
}

}  // namespace vramplan_py
