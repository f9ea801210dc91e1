#include <pybind11/stl.h>

#include "register.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/render.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/weights.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_spec(py::module_& m) {
  using vramplan::GpuSpec;
  using vramplan::ModelSpec;
  using vramplan::SpecDatabase;

  py::class_<ModelSpec>(m, "ModelSpec")
      .def_readonly("id", &ModelSpec::id)
      .def_readonly("aliases", &ModelSpec::aliases)
      .def_readonly("source", &ModelSpec::source)
      .def_readonly("config_defaults", &ModelSpec::config_defaults)
      .def_readonly("generic_assumptions", &ModelSpec::generic_assumptions)
      .def_readonly("model_type", &ModelSpec::model_type)
      .def_readonly("num_hidden_layers", &ModelSpec::num_hidden_layers)
      .def_readonly("vocab_size", &ModelSpec::vocab_size)
      .def_readonly("max_position_embeddings", &ModelSpec::max_position_embeddings)
      .def("to_dict", [](const ModelSpec& s) { return to_python(vramplan::to_json(s)); })
      .def(
          "parameter_count",
          [](const ModelSpec& s, bool include_mtp) {
            return vramplan::parameter_count(s, include_mtp);
          },
          py::arg("include_mtp") = false)
      .def(
          "checkpoint_bytes",
          [](const ModelSpec& s, bool include_mtp) {
            return vramplan::checkpoint_tensor_bytes(s, include_mtp);
          },
          py::arg("include_mtp") = true)
      .def("__repr__", [](const ModelSpec& s) { return "<ModelSpec " + s.id + ">"; });

  py::class_<GpuSpec>(m, "GpuSpec")
      .def(py::init([](std::string id, std::int64_t total_memory_bytes, std::string name,
                       double compute_capability, bool pcie_only, std::string family) {
             GpuSpec g;
             g.id = std::move(id);
             g.name = name.empty() ? g.id : std::move(name);
             g.vendor = "nvidia";
             g.total_memory_bytes = total_memory_bytes;
             g.total_memory_source = "given by the user";
             g.compute_capability = compute_capability;
             g.pcie_only = pcie_only;
             g.family = std::move(family);
             return g;
           }),
           // A GPU not in the database: its interconnect is unknown, so TP>=2 is charged the
           // larger NVLink figure (the safe side).
           py::arg("id"), py::arg("total_memory_bytes"), py::arg("name") = "",
           py::arg("compute_capability") = 9.0, py::arg("pcie_only") = false,
           py::arg("family") = "")
      .def(
          "with_total_memory",
          [](const GpuSpec& g, std::int64_t total_memory_bytes) {
            // Every other fact of the GPU kept (architecture, SMs, vendor, family,
            // interconnect): only the total the runtime reports is replaced.
            GpuSpec copy = g;
            copy.total_memory_bytes = total_memory_bytes;
            copy.total_memory_source = "given by the user";
            copy.total_memory_derived = false;
            return copy;
          },
          py::arg("total_memory_bytes"),
          "This GPU with another total memory (bytes), every other fact kept.")
      .def(
          "with_pcie_only",
          [](const GpuSpec& g, bool pcie_only) {
            GpuSpec copy = g;
            copy.pcie_only = pcie_only;
            return copy;
          },
          py::arg("pcie_only"),
          "This GPU with its GPUs talking over PCIe only (True) or NVLink (False) at TP >= 2.")
      .def_readonly("id", &GpuSpec::id)
      .def_readonly("name", &GpuSpec::name)
      .def_readonly("total_memory_bytes", &GpuSpec::total_memory_bytes)
      .def_readonly("pcie_only", &GpuSpec::pcie_only)
      .def_readonly("family", &GpuSpec::family)
      .def_readonly("mig_parent", &GpuSpec::mig_parent)
      .def_readonly("mig_profile", &GpuSpec::mig_profile)
      .def("to_dict", [](const GpuSpec& g) { return to_python(vramplan::to_json(g)); })
      .def("__repr__", [](const GpuSpec& g) { return "<GpuSpec " + g.id + ">"; });

  py::class_<SpecDatabase>(m, "SpecDatabase")
      .def_static("load_directory", &SpecDatabase::load_directory, py::arg("path"))
      .def("model", &SpecDatabase::model, py::arg("name"), py::return_value_policy::copy)
      .def("gpu", &SpecDatabase::gpu, py::arg("name"), py::return_value_policy::copy)
      .def("has_model", &SpecDatabase::has_model, py::arg("name"))
      .def("has_gpu", &SpecDatabase::has_gpu, py::arg("name"))
      .def("gpu_candidates", &SpecDatabase::gpu_candidates, py::arg("name"))
      .def("gpu_name_note", &SpecDatabase::gpu_name_note, py::arg("name"))
      .def("model_ids", &SpecDatabase::model_ids)
      .def("gpu_ids", &SpecDatabase::gpu_ids)
      .def("add_model", &SpecDatabase::add_model, py::arg("spec"));

  m.def("load_model_spec_file", &vramplan::load_model_spec_file, py::arg("path"));
  m.def("parse_model_spec_yaml", &vramplan::parse_model_spec_yaml, py::arg("text"),
        py::arg("file") = "<string>");
  m.def("schema_markdown", &vramplan::schema_markdown);
}

}  // namespace vramplan_py
