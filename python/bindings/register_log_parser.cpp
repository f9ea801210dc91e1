// vramplan._core.parse_vllm_log: the vLLM startup-log parser, result as a plain dict.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/log_parser.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_log_parser(py::module_& m) {
  m.def(
      "parse_vllm_log",
      [](const std::string& text) {
        nlohmann::json j;
        {
          // Parsing a large log touches no Python object: let other threads run meanwhile.
          py::gil_scoped_release release;
          j = vramplan::to_json(vramplan::parse_vllm_log(text));
        }
        return py::module_::import("json").attr("loads")(j.dump());
      },
      py::arg("text"),
      "Read the figures a vLLM startup log prints (launch settings, weights, activation peak, "
      "non-torch memory, KV cache size, CUDA graphs, failure figures) and how the launch ended. "
      "Returns a dict with every field (None when the log does not print it); never raises for "
      "malformed text.");
}

}  // namespace vramplan_py
