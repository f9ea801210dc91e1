// vramplan._core's SGLang entry points: breakdown, plan (the solver) and the startup-log parser.
// Knobs cross as a dict of SGLang's ServerArgs names, each checked by the SGLang knob table;
// results are plain dicts from the core's JSON renderers.
#include <pybind11/pybind11.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "register.hpp"
#include "vramplan/engine_descriptor.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_knobs.hpp"
#include "vramplan/sglang_log_parser.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

struct SglangRequest {
  vramplan::SglangConfig config;
  std::string version;  // as asked; "" = the newest row's release
};

// A dict of SGLang knob names -> the launch; None leaves a knob unset. A vLLM name is an error
// naming SGLang's knob (sglang_knob_spec).
SglangRequest request_from(const vramplan::ModelSpec& spec, const py::dict& knobs,
                           const std::string& model_path) {
  SglangRequest r;
  r.config.model_path = model_path.empty() ? spec.id : model_path;
  for (const auto& item : knobs) {
    const std::string key = py::str(item.first);
    if (item.second.is_none()) {
      (void)vramplan::sglang_knob_spec(key);  // unset, but still one of SGLang's knobs
      continue;
    }
    if (key == "sglang_version") {
      if (!py::isinstance<py::str>(item.second)) {
        throw vramplan::ConfigError(key, py::repr(item.second).cast<std::string>(),
                                    "a version such as 0.5.23", "expected text");
      }
      r.version = item.second.cast<std::string>();
      continue;
    }
    vramplan::set_sglang_knob(r.config, key, knob_value(key, item.second));
  }
  return r;
}

// The release the rules come from, and the note when they were read from another one.
void add_release(nlohmann::json& j, const SglangRequest& r) {
  const vramplan::SglangTable& table = vramplan::sglang_table();
  j["sglang_version"] = r.version.empty() ? vramplan::newest_known_sglang_version() : r.version;
  j["rules_release"] = vramplan::sglang_rules(table, r.version).release;
  const std::string note = vramplan::sglang_version_note(table, r.version);
  j["version_note"] = note.empty() ? nlohmann::json(nullptr) : nlohmann::json(note);
}

}  // namespace

void register_sglang(py::module_& m) {
  m.def(
      "sglang_breakdown",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         const std::string& model_path) {
        const SglangRequest r = request_from(spec, knobs, model_path);
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          const vramplan::SglangTable& table = vramplan::sglang_table();
          j = vramplan::to_json(vramplan::sglang_breakdown(
              spec, gpu, vramplan::sglang_rules(table, r.version), r.config));
          add_release(j, r);
        }
        return to_python(j);
      },
      py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("model_path") = "",
      "What an SGLang server's startup finds per rank for `spec` on `gpu` with these knobs "
      "(SGLang's ServerArgs names, see ENGINES' sglang row): baseline, weights, "
      "mem_fraction_static, KV pool and max_total_num_tokens, req_to_token, the slack's "
      "consumers and the verdict, as a dict.");
  m.def(
      "sglang_plan",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         const std::string& model_path) {
        const SglangRequest r = request_from(spec, knobs, model_path);
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          const vramplan::SglangTable& table = vramplan::sglang_table();
          const vramplan::SglangPlan plan =
              vramplan::sglang_plan(spec, gpu, vramplan::sglang_rules(table, r.version), r.config);
          j = vramplan::to_json(plan);
          // The planned launch as the engine's descriptor renders it.
          const vramplan::EngineDescriptor& engine = vramplan::engine_descriptor("sglang");
          j["launch_argv"] = engine.launch_argv(&plan);
          j["engine_kwargs"] = engine.launch_kwargs(&plan);
          add_release(j, r);
        }
        return to_python(j);
      },
      py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("model_path") = "",
      "The launch as written judged, then the largest mem_fraction_static, "
      "max_running_requests, context_length, chunked_prefill_size and cuda_graph_max_bs that "
      "start (each with the others as given), and the planned launch line, as a dict.");
  m.def(
      "sglang_equivalent_knob",
      [](const std::string& vllm_name) {
        return std::string(vramplan::sglang_equivalent_of_vllm_knob(vllm_name));
      },
      py::arg("vllm_name"),
      "SGLang's knob nearest in meaning to a vLLM knob name ('' where SGLang has none).");
  m.def(
      "parse_sglang_log",
      [](const std::string& text) {
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = vramplan::to_json(vramplan::parse_sglang_log(text));
        }
        return to_python(j);
      },
      py::arg("text"),
      "Read the figures an SGLang startup log prints (launch settings from server_args, "
      "baseline, weights, KV pool, graphs, failures) and how the launch ended. Returns a dict "
      "with every field (None when absent); never raises for malformed text. A path "
      "(os.PathLike) is streamed in 1 MiB chunks (vramplan.ParseError if it cannot be read).");
  m.def(
      "parse_sglang_log",
      [](const std::filesystem::path& path) {
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          j = vramplan::to_json(vramplan::read_sglang_log_file(path.string()));
        }
        return to_python(j);
      },
      py::arg("path"));
  m.def(
      "parse_sglang_log",
      [](const py::object& other) -> py::object {
        throw vramplan::ConfigError("parse_sglang_log(text)",
                                    py::str(py::type::of(other).attr("__name__")),
                                    "a str, bytes or os.PathLike", "not a log text or path");
      },
      py::arg("text"));
}

}  // namespace vramplan_py
