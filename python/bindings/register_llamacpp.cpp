// vramplan._core's llama.cpp entry points: the buffers of one launch over a GGUF file, and the
// solver for -ngl / --n-cpu-moe. The launch crosses as a dict of llama.cpp's flag names with
// dashes as underscores (ctx_size, cache_type_k, n_gpu_layers, ...); results are dicts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "register.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/llamacpp.hpp"
#include "vramplan/llamacpp_log.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/tensor_headers.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

std::int64_t int_field(const std::string& key, const py::handle& value) {
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
    throw vramplan::ConfigError(key, py::repr(value).cast<std::string>(), "an integer",
                                "expected an integer");
  }
  return value.cast<std::int64_t>();
}

bool bool_field(const std::string& key, const py::handle& value) {
  if (!py::isinstance<py::bool_>(value)) {
    throw vramplan::ConfigError(key, py::repr(value).cast<std::string>(), "True or False",
                                "expected a boolean");
  }
  return value.cast<bool>();
}

std::string text_field(const std::string& key, const py::handle& value) {
  if (!py::isinstance<py::str>(value)) {
    throw vramplan::ConfigError(key, py::repr(value).cast<std::string>(), "text", "expected text");
  }
  return value.cast<std::string>();
}

std::vector<double> split_field(const std::string& key, const py::handle& value) {
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) {
    throw vramplan::ConfigError(key, py::repr(value).cast<std::string>(),
                                "a list of shares, one per GPU", "expected a list");
  }
  std::vector<double> shares;
  for (const py::handle item : value) {
    if (!py::isinstance<py::int_>(item) && !py::isinstance<py::float_>(item)) {
      throw vramplan::ConfigError(key, py::repr(value).cast<std::string>(), "numbers, one per GPU",
                                  "expected numbers");
    }
    shares.push_back(item.cast<double>());
  }
  return shares;
}

vramplan::LlamacppFlashAttn flash_attn_from(const std::string& value) {
  if (value == "on") return vramplan::LlamacppFlashAttn::On;
  if (value == "off") return vramplan::LlamacppFlashAttn::Off;
  if (value == "auto") return vramplan::LlamacppFlashAttn::Auto;
  throw vramplan::ConfigError("flash_attn", "'" + value + "'", "on, off, auto",
                              "not a --flash-attn value");
}

std::int64_t gpu_layers_from(const py::handle& value) {
  if (py::isinstance<py::str>(value)) {
    const auto text = value.cast<std::string>();
    if (text == "all") return vramplan::kLlamacppLayersAll;
    if (text == "auto") return vramplan::kLlamacppLayersAuto;
    throw vramplan::ConfigError("n_gpu_layers", "'" + text + "'", "a count, all, auto",
                                "not an -ngl value");
  }
  return int_field("n_gpu_layers", value);
}

void set_field(vramplan::LlamacppLaunch& launch, const std::string& key, const py::handle& v) {
  if (key == "ctx_size") return void(launch.ctx_size = int_field(key, v));
  if (key == "cache_type_k") {
    return void(launch.cache_type_k = vramplan::llamacpp_cache_type(text_field(key, v)));
  }
  if (key == "cache_type_v") {
    return void(launch.cache_type_v = vramplan::llamacpp_cache_type(text_field(key, v)));
  }
  if (key == "flash_attn") return void(launch.flash_attn = flash_attn_from(text_field(key, v)));
  if (key == "n_gpu_layers") return void(launch.n_gpu_layers = gpu_layers_from(v));
  if (key == "parallel") return void(launch.parallel = int_field(key, v));
  if (key == "kv_unified") return void(launch.kv_unified = bool_field(key, v));
  if (key == "n_cpu_moe") return void(launch.n_cpu_moe = int_field(key, v));
  if (key == "no_mmap") return void(launch.no_mmap = bool_field(key, v));
  if (key == "mlock") return void(launch.mlock = bool_field(key, v));
  if (key == "swa_full") return void(launch.swa_full = bool_field(key, v));
  if (key == "no_kv_offload") return void(launch.no_kv_offload = bool_field(key, v));
  if (key == "batch_size") return void(launch.batch = int_field(key, v));
  if (key == "ubatch_size") return void(launch.ubatch = int_field(key, v));
  if (key == "tensor_split") return void(launch.tensor_split = split_field(key, v));
  throw vramplan::ConfigError(key, py::repr(v).cast<std::string>(),
                              "ctx_size, cache_type_k, cache_type_v, flash_attn, n_gpu_layers, "
                              "parallel, kv_unified, n_cpu_moe, no_mmap, mlock, swa_full, "
                              "no_kv_offload, batch_size, ubatch_size, tensor_split",
                              "not a llama.cpp launch field");
}

vramplan::LlamacppLaunch launch_from(const py::dict& fields) {
  vramplan::LlamacppLaunch launch;
  for (const auto& item : fields) {
    if (!item.second.is_none()) set_field(launch, py::str(item.first), item.second);
  }
  return launch;
}

const char* flash_attn_name(vramplan::LlamacppFlashAttn value) {
  switch (value) {
    case vramplan::LlamacppFlashAttn::On:
      return "on";
    case vramplan::LlamacppFlashAttn::Off:
      return "off";
    case vramplan::LlamacppFlashAttn::Auto:
      break;
  }
  return "auto";
}

nlohmann::json launch_json(const vramplan::LlamacppLaunch& l) {
  return {{"ctx_size", l.ctx_size},
          {"cache_type_k", vramplan::llamacpp_type_name(l.cache_type_k)},
          {"cache_type_v", vramplan::llamacpp_type_name(l.cache_type_v)},
          {"flash_attn", flash_attn_name(l.flash_attn)},
          {"n_gpu_layers", l.n_gpu_layers},
          {"parallel", l.parallel},
          {"kv_unified", l.kv_unified},
          {"n_cpu_moe", l.n_cpu_moe},
          {"no_mmap", l.no_mmap},
          {"mlock", l.mlock},
          {"swa_full", l.swa_full},
          {"no_kv_offload", l.no_kv_offload},
          {"batch_size", l.batch},
          {"ubatch_size", l.ubatch},
          {"tensor_split", l.tensor_split}};
}

nlohmann::json gpus_json(const vramplan::LlamacppMemory& m) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const vramplan::LlamacppGpu& g : m.gpus) {
    gpus.push_back({{"layers", g.layers},
                    {"output", g.output},
                    {"model_bytes", g.model_bytes},
                    {"kv_bytes", g.kv_bytes},
                    {"rs_bytes", g.rs_bytes},
                    {"compute_bytes", g.compute_bytes},
                    {"total_bytes", g.total_bytes()}});
  }
  return gpus;
}

// `weights_exact` false: the model's tensor list is a database entry's stand-in for the file's,
// so the model buffers move from `exact` to `approximate`.
nlohmann::json memory_json(const vramplan::LlamacppMemory& m, bool weights_exact) {
  nlohmann::json exact = {"gpu_kv_bytes", "gpu_rs_bytes", "host_kv_bytes", "host_rs_bytes"};
  nlohmann::json approximate = {"gpu_compute_bytes", "host_compute_bytes", "host_output_bytes"};
  for (const char* weights : {"gpu_model_bytes", "host_model_bytes"}) {
    (weights_exact ? exact : approximate).push_back(weights);
  }
  return {{"gpus", gpus_json(m)},
          {"max_gpu_total_bytes", m.max_gpu_total_bytes()},
          {"n_ctx", m.n_ctx},
          {"n_ctx_seq", m.n_ctx_seq},
          {"n_stream", m.n_stream},
          {"kv_size_swa", m.kv_size_swa},
          {"n_ubatch", m.n_ubatch},
          {"flash_attn", m.flash_attn},
          {"n_gpu_layers", m.n_gpu_layers},
          {"layers_on_gpu", m.layers_on_gpu},
          {"output_on_gpu", m.output_on_gpu},
          {"n_cpu_moe", m.n_cpu_moe},
          {"gpu_model_bytes", m.gpu_model_bytes},
          {"gpu_kv_bytes", m.gpu_kv_bytes},
          {"gpu_compute_bytes", m.gpu_compute_bytes},
          {"gpu_total_bytes", m.gpu_total_bytes()},
          {"host_model_bytes", m.host_model_bytes},
          {"host_weight_bytes", m.host_weight_bytes},
          {"host_kv_bytes", m.host_kv_bytes},
          {"gpu_rs_bytes", m.gpu_rs_bytes},
          {"host_rs_bytes", m.host_rs_bytes},
          {"host_compute_bytes", m.host_compute_bytes},
          {"host_output_bytes", m.host_output_bytes},
          {"host_ram_bytes", m.host_ram_bytes},
          {"exact", exact},
          {"approximate", approximate},
          {"notes", m.notes}};
}

nlohmann::json model_json(const vramplan::LlamacppModel& model) {
  return {{"file", model.file},         {"architecture", model.architecture},
          {"n_layer", model.n_layer},   {"n_ctx_train", model.n_ctx_train},
          {"n_expert", model.n_expert}, {"approximation", model.approximation}};
}

nlohmann::json memory_json(const vramplan::LlamacppModel& model,
                           const vramplan::LlamacppMemory& m) {
  return memory_json(m, model.approximation.empty());
}

// A GGUF file's path, or a database GGUF entry (built from its shapes and per-role types).
using ModelSource = std::variant<std::string, vramplan::ModelSpec>;

vramplan::LlamacppModel model_at(const ModelSource& source) {
  if (const auto* spec = std::get_if<vramplan::ModelSpec>(&source)) {
    return vramplan::llamacpp_model_from_spec(*spec);
  }
  return vramplan::llamacpp_model_from_gguf(
      vramplan::read_gguf_header(std::get<std::string>(source)));
}

}  // namespace

void register_llamacpp(py::module_& m) {
  m.def(
      "llamacpp_memory",
      [](const ModelSource& model_source, const py::dict& launch) {
        const vramplan::LlamacppModel model = model_at(model_source);
        const vramplan::LlamacppLaunch l = launch_from(launch);
        return to_python({{"model", model_json(model)},
                          {"launch", launch_json(l)},
                          {"memory", memory_json(model, vramplan::llamacpp_memory(model, l))}});
      },
      py::arg("model"), py::arg("launch"),
      "The buffers llama.cpp allocates for `launch` (llama.cpp flag names, dashes as "
      "underscores) over `model` (a .gguf path, or a database GGUF entry's ModelSpec), per "
      "device kind.");
  m.def(
      "llamacpp_solve",
      [](const ModelSource& model_source, const py::dict& launch, std::int64_t gpu_budget_bytes) {
        const vramplan::LlamacppModel model = model_at(model_source);
        const vramplan::LlamacppLaunch l = launch_from(launch);
        const bool pinned_ngl = launch.contains("n_gpu_layers") &&
                                !launch["n_gpu_layers"].is_none() &&
                                l.n_gpu_layers != vramplan::kLlamacppLayersAuto;
        const bool pinned_moe = launch.contains("n_cpu_moe") && !launch["n_cpu_moe"].is_none();
        const vramplan::LlamacppFit fit =
            vramplan::llamacpp_solve(model, l, gpu_budget_bytes, pinned_ngl, pinned_moe);
        return to_python(
            {{"model", model_json(model)},
             {"fits", fit.fits},
             {"verdict", fit.verdict},
             {"gpu_budget_bytes", gpu_budget_bytes},
             {"max_ctx_size", vramplan::llamacpp_max_context(model, fit.launch, gpu_budget_bytes)},
             {"launch", launch_json(fit.launch)},
             {"memory", memory_json(model, fit.memory)}});
      },
      py::arg("model"), py::arg("launch"), py::arg("gpu_budget_bytes"),
      "The largest -ngl (and smallest --n-cpu-moe for MoE) whose GPU buffers fit "
      "`gpu_budget_bytes`; an -ngl or --n-cpu-moe the launch sets is kept and checked.");
  m.def(
      "llamacpp_read_log",
      [](const std::string& log_path) {
        const vramplan::LlamacppLogFigures figures = vramplan::read_llamacpp_log_file(log_path);
        const vramplan::LlamacppDiagnosis d = vramplan::diagnose_llamacpp_log(figures);
        return to_python(
            {{"figures", vramplan::to_json(figures)},
             {"diagnosis",
              {{"buffer", d.buffer}, {"summary", d.summary}, {"remedies", d.remedies}}}});
      },
      py::arg("log_path"),
      "A llama.cpp startup log's buffers per device, context and hyper-parameters, and which "
      "buffer an out-of-memory start failed on with the remedies in llama.cpp's flags.");
  m.def(
      "llamacpp_log_memory",
      [](const std::string& log_path, const ModelSource& model_source) {
        const vramplan::LlamacppLogFigures figures = vramplan::read_llamacpp_log_file(log_path);
        const auto* path = std::get_if<std::string>(&model_source);
        const vramplan::LlamacppModel model = path != nullptr && path->empty()
                                                  ? vramplan::llamacpp_model_from_log(figures)
                                                  : model_at(model_source);
        const vramplan::LlamacppLaunch l = vramplan::llamacpp_launch_from_log(figures);
        return to_python({{"launch", launch_json(l)},
                          {"memory", memory_json(model, vramplan::llamacpp_memory(model, l))}});
      },
      py::arg("log_path"), py::arg("model") = "",
      "The plan for the launch a llama.cpp log resolved (context, batches, flash attention, "
      "-ngl), over `model` (a .gguf path or a database GGUF entry's ModelSpec) or, without one, "
      "the log's own hyper-parameters (no tensors read: model bytes are then 0).");
  const vramplan::LlamacppDefaults& d = vramplan::llamacpp_defaults();
  m.attr("LLAMACPP_DEFAULTS") = to_python({{"source", d.source},
                                           {"cache_types", d.cache_types},
                                           {"fit_target_bytes", d.fit_target_bytes},
                                           {"server_auto_parallel", d.server_auto_parallel}});
}

}  // namespace vramplan_py
