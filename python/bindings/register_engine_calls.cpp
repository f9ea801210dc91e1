// vramplan._core's per-engine calls, each taking the engine's name and dispatching once through
// its descriptor (engine_descriptor.hpp): reading a startup log, the launch it states, the
// diagnosis of a failed launch, and the release that judges a version. An unknown name is a
// ConfigError listing the engines. Results are dicts from the core's JSON.
#include <pybind11/pybind11.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "register.hpp"
#include "vramplan/engine_descriptor.hpp"
#include "vramplan/errors.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

// Log bytes are untrusted: anything left in a line that is not UTF-8 becomes U+FFFD.
py::object from_log(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(
      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void register_parse_log(py::module_& m) {
  // Reading touches no Python object: other threads run meanwhile.
  m.def(
      "parse_log",
      [](const std::string& engine, const std::string& text) {
        const vramplan::EngineDescriptor& e = vramplan::engine_descriptor(engine);
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = e.read_log(text);
        }
        return from_log(j);
      },
      py::arg("engine"), py::arg("text"),
      "Read the figures the engine's startup log prints (launch settings, memory figures, how "
      "the launch ended) as a dict with every field (None when the log does not print it); "
      "never raises for malformed text. Given a str or bytes, that is the log; given a path "
      "(os.PathLike), the file is streamed in 1 MiB chunks, never read whole (ParseError if it "
      "cannot be read). Lines over 64 KiB are skipped, only the first 1 GiB is read "
      "('truncated'), and a log holding several launches reports the last one.");
  m.def(
      "parse_log",
      [](const std::string& engine, const std::filesystem::path& path) {
        const vramplan::EngineDescriptor& e = vramplan::engine_descriptor(engine);
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = e.read_log_file(path.string());
        }
        return from_log(j);
      },
      py::arg("engine"), py::arg("path"));
  // Anything else (None, a number) is the caller's mistake, named, not a TypeError.
  m.def(
      "parse_log",
      [](const std::string& engine, const py::object& other) -> py::object {
        (void)vramplan::engine_descriptor(engine);
        throw vramplan::ConfigError("parse_log(engine, text)",
                                    py::str(py::type::of(other).attr("__name__")),
                                    "a str, bytes or os.PathLike", "not a log text or path");
      },
      py::arg("engine"), py::arg("text"));
}

}  // namespace

void register_engine_calls(py::module_& m) {
  register_parse_log(m);
  m.def(
      "launch_from_figures",
      [](const std::string& engine, const py::dict& figures) {
        const vramplan::EngineDescriptor& e = vramplan::engine_descriptor(engine);
        const std::string text = py::str(py::module_::import("json").attr("dumps")(figures));
        return to_python(e.launch_from_figures(nlohmann::json::parse(text)));
      },
      py::arg("engine"), py::arg("figures"),
      "The launch a log's figures (parse_log's dict) state, as knobs under the engine's names "
      "(its version knob where the log prints a release); what the log leaves unsaid is absent.");
  m.def(
      "diagnose_log",
      [](const std::string& engine, const std::string& log_text, const std::string& kernel_text) {
        const vramplan::EngineDescriptor& e = vramplan::engine_descriptor(engine);
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = e.diagnose(log_text, kernel_text);
        }
        return from_log(j);
      },
      py::arg("engine"), py::arg("log_text"), py::arg("kernel_text") = std::string(),
      "Name the cause of a failed launch of the engine from its log and an optional "
      "dmesg/journalctl excerpt. Returns a dict: engine, cause (the engine's fixed vocabulary), "
      "explanation, evidence (lines), advice ([{knob, flag, action, value, why}] under the "
      "engine's names and flags), oom_kills, figures (parse_log's dict), and the engine's own "
      "extras (vLLM: oom_phase, oom_other_processes_bytes). Never raises for malformed text.");
  m.def(
      "engine_release",
      [](const std::string& engine, const std::string& version) {
        const vramplan::EngineRelease r = vramplan::engine_descriptor(engine).release(version);
        py::dict out;
        out["version"] = r.version;
        out["rules_release"] = r.rules_release;
        out["note"] = r.note.empty() ? py::object(py::none()) : py::object(py::str(r.note));
        return out;
      },
      py::arg("engine"), py::arg("version") = std::string(),
      "The release whose rule row judges `version` of the engine ('' the newest): version, "
      "rules_release, note (what taking that row assumes, or None). ConfigError for a version "
      "the engine's rows cannot judge.");
}

}  // namespace vramplan_py
