// vramplan._core.parse_vllm_log: the vLLM startup-log parser, result as a plain dict.
#include <pybind11/pybind11.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "register.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/log_parser.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_log_parser(py::module_& m) {
  // Parsing touches no Python object: other threads run meanwhile.
  m.def(
      "parse_vllm_log",
      [](const std::string& text) {
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = vramplan::to_json(vramplan::parse_vllm_log(text));
        }
        return to_python(j);
      },
      py::arg("text"),
      "Read the figures a vLLM startup log prints (launch settings, weights, activation peak, "
      "non-torch memory, KV cache size, CUDA graphs, failure figures) and how the launch ended. "
      "Returns a dict with every field (None when the log does not print it); never raises for "
      "malformed text. Given a str or bytes, that is the log; given a path (os.PathLike), the "
      "file is streamed in 1 MiB chunks, never read whole (vramplan.ParseError if it cannot be "
      "read). Lines over 64 KiB are skipped, and only the first 1 GiB is read ('truncated'). A log "
      "holding several launches (a restart appended) reports the last one ('launches' counts "
      "them).");
  m.def(
      "parse_vllm_log",
      [](const std::filesystem::path& path) {
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = vramplan::to_json(vramplan::read_vllm_log_file(path.string()));
        }
        return to_python(j);
      },
      py::arg("path"));
  // Anything else (None, a number) is the caller's mistake, named, not a TypeError.
  m.def(
      "parse_vllm_log",
      [](const py::object& other) -> py::object {
        throw vramplan::ConfigError("parse_vllm_log(text)",
                                    py::str(py::type::of(other).attr("__name__")),
                                    "a str, bytes or os.PathLike", "not a log text or path");
      },
      py::arg("text"));
}

}  // namespace vramplan_py
