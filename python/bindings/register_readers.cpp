// vramplan._core readers of files a user hands us: config.json import, model paths (folders,
// HF cache entries), safetensors and GGUF headers. Results cross as plain dicts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <string>

#include "register.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_source.hpp"
#include "vramplan/tensor_headers.hpp"
#include "vramplan/yaml_names.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

nlohmann::json tensors_json(const std::vector<vramplan::TensorInfo>& tensors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : tensors) {
    out.push_back({{"name", t.name},
                   {"dtype", std::string(vramplan::dtype_info(t.dtype).name)},
                   {"shape", t.shape},
                   {"bytes", t.bytes},
                   {"offset", t.offset}});
  }
  return out;
}

}  // namespace

// Every reader below touches only files and C++ objects, so it runs with the GIL released
// (a large header or a slow disk must not stall other Python threads); results are turned
// into Python objects after the GIL is taken back.
void register_readers(py::module_& m) {
  using release_gil = py::call_guard<py::gil_scoped_release>;
  m.def(
      "load_yaml_names_file",
      [](const std::string& path, const std::string& what, std::int64_t max_bytes) {
        return to_python(vramplan::load_yaml_names_file(path, what, max_bytes));
      },
      py::arg("path"), py::arg("what"), py::arg("max_bytes"),
      "A YAML file of names (maps, lists, every scalar its text) as dicts and lists.");
  m.def("load_hf_config", &vramplan::load_hf_config, py::arg("path"), release_gil(),
        "ModelSpec from a config.json file or a folder holding one (hf_quant_config.json too).");
  m.def(
      "load_model_path",
      [](const std::string& path) {
        vramplan::LoadedModel loaded;
        {
          py::gil_scoped_release release;
          loaded = vramplan::load_model_path(path);
        }
        py::dict out;
        out["spec"] = loaded.spec;
        out["kind"] = loaded.kind;
        out["files"] = loaded.files;
        out["checkpoint_bytes"] = loaded.checkpoint_bytes;
        out["spec_checkpoint_bytes"] = loaded.spec_checkpoint_bytes;
        return out;
      },
      py::arg("path"));
  m.def("resolve_model_folder", &vramplan::resolve_model_folder, py::arg("path"), release_gil());
  m.def(
      "with_checkpoint_bytes",
      [](vramplan::ModelSpec spec, std::int64_t checkpoint_bytes) {
        spec.checkpoint_bytes = checkpoint_bytes;
        return spec;
      },
      py::arg("spec"), py::arg("checkpoint_bytes"),
      "A copy of `spec` whose stored tensor bytes are `checkpoint_bytes` (exact, from safetensors "
      "headers read elsewhere, e.g. over HTTP range requests).");
  m.def(
      "read_safetensors_folder",
      [](const std::string& dir) {
        nlohmann::json out;
        {
          py::gil_scoped_release release;
          const vramplan::CheckpointTensors c = vramplan::read_safetensors_folder(dir);
          out = {{"files", c.files},
                 {"total_bytes", c.total_bytes},
                 {"tensors", tensors_json(c.tensors)}};
        }
        return to_python(out);
      },
      py::arg("dir"));
  m.def(
      "read_gguf_header",
      [](const std::string& path) {
        nlohmann::json out;
        {
          py::gil_scoped_release release;
          const vramplan::GgufHeader h = vramplan::read_gguf_header(path);
          out = {{"file", h.file},
                 {"version", h.version},
                 {"architecture", h.architecture().value_or("")},
                 {"tensor_bytes", h.tensor_bytes()},
                 {"tensors", tensors_json(h.tensors)}};
        }
        return to_python(out);
      },
      py::arg("path"));
}

}  // namespace vramplan_py
