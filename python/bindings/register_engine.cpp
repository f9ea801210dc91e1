#include <pybind11/stl.h>

#include "register.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/render.hpp"
#include "vramplan/solver.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

// Python dict of vLLM knob names -> EngineConfig. Unknown keys are a ConfigError.
vramplan::EngineConfig engine_config_from(const py::dict& knobs) {
  vramplan::EngineConfig c;
  for (const auto& item : knobs) {
    const std::string key = py::str(item.first);
    const py::handle value = item.second;
    if (value.is_none()) continue;
    if (key == "engine_version")
      c.engine_version = py::str(value);
    else if (key == "gpu_memory_utilization")
      c.gpu_memory_utilization = value.cast<double>();
    else if (key == "max_model_len")
      c.max_model_len = value.cast<std::int64_t>();
    else if (key == "max_num_seqs")
      c.max_num_seqs = value.cast<std::int64_t>();
    else if (key == "max_num_batched_tokens")
      c.max_num_batched_tokens = value.cast<std::int64_t>();
    else if (key == "block_size")
      c.block_size = value.cast<std::int32_t>();
    else if (key == "kv_cache_dtype")
      c.kv_cache_dtype = py::str(value);
    else if (key == "dtype")
      c.dtype = py::str(value);
    else if (key == "quantization")
      c.quantization = py::str(value);
    else if (key == "tensor_parallel_size")
      c.tensor_parallel_size = value.cast<std::int32_t>();
    else if (key == "pipeline_parallel_size")
      c.pipeline_parallel_size = value.cast<std::int32_t>();
    else if (key == "enforce_eager")
      c.enforce_eager = value.cast<bool>();
    else if (key == "llm_class")
      c.llm_class = value.cast<bool>();
    else if (key == "cpu_offload_bytes")
      c.cpu_offload_bytes = value.cast<std::int64_t>();
    else if (key == "safetensors_load_strategy")
      c.safetensors_load_strategy = py::str(value);
    else if (key == "kv_offloading_bytes")
      c.kv_offloading_bytes = value.cast<std::int64_t>();
    else if (key == "swap_space_bytes")
      c.swap_space_bytes = value.cast<std::int64_t>();
    else if (key == "max_loras")
      c.max_loras = value.cast<std::int32_t>();
    else if (key == "max_lora_rank")
      c.max_lora_rank = value.cast<std::int32_t>();
    else if (key == "kv_cache_memory_bytes")
      c.kv_cache_memory_bytes = value.cast<std::int64_t>();
    else if (key == "num_speculative_tokens")
      c.num_speculative_tokens = value.cast<std::int32_t>();
    else if (key == "speculative_method")
      c.speculative_method = py::str(value);
    else if (key == "speculative_model")  // a ModelSpec (Python resolves ids and paths)
      c.draft_model =
          std::make_shared<const vramplan::ModelSpec>(value.cast<vramplan::ModelSpec>());
    else {
      throw vramplan::ConfigError(key, py::str(value), "a vLLM engine knob (see vramplan.KNOBS)",
                                  "unknown engine knob");
    }
  }
  return c;
}

}  // namespace

void register_engine(py::module_& m) {
  m.def(
      "compute_breakdown",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         std::int32_t num_gpus, std::int64_t memory_used_by_others_bytes,
         std::int64_t host_ram_bytes) {
        vramplan::HardwareConfig hardware;
        hardware.gpu = gpu;
        hardware.num_gpus = num_gpus;
        hardware.memory_used_by_others_bytes = memory_used_by_others_bytes;
        hardware.host_ram_bytes = host_ram_bytes;
        const vramplan::EngineConfig config = engine_config_from(knobs);
        nlohmann::json out;
        {
          py::gil_scoped_release release;
          out = vramplan::to_json(vramplan::compute_breakdown(spec, hardware, config));
        }
        return to_python(out);
      },
      py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("num_gpus") = 1,
      py::arg("memory_used_by_others_bytes") = 0, py::arg("host_ram_bytes") = 0);

  m.def(
      "solve",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         std::int32_t num_gpus, std::int64_t memory_used_by_others_bytes,
         std::int64_t host_ram_bytes, std::int64_t target_context_tokens,
         std::int64_t target_concurrency, std::int64_t safety_margin_bytes) {
        vramplan::SolveRequest request;
        request.pinned = engine_config_from(knobs);
        request.hardware.gpu = gpu;
        request.hardware.num_gpus = num_gpus;
        request.hardware.memory_used_by_others_bytes = memory_used_by_others_bytes;
        request.hardware.host_ram_bytes = host_ram_bytes;
        request.target_context_tokens = target_context_tokens;
        request.target_concurrency = target_concurrency;
        if (safety_margin_bytes >= 0) request.safety_margin_bytes = safety_margin_bytes;
        nlohmann::json out;
        {
          py::gil_scoped_release release;
          out = vramplan::to_json(vramplan::solve(spec, request));
        }
        return to_python(out);
      },
      py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("num_gpus") = 1,
      py::arg("memory_used_by_others_bytes") = 0, py::arg("host_ram_bytes") = 0,
      py::arg("target_context_tokens") = 0, py::arg("target_concurrency") = 0,
      py::arg("safety_margin_bytes") = -1);

  m.def(
      "sweep",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         std::vector<double> utilizations, std::vector<std::int64_t> max_model_lens,
         std::vector<std::int64_t> max_num_seqs, std::int32_t num_gpus,
         std::int64_t memory_used_by_others_bytes) {
        vramplan::HardwareConfig hardware;
        hardware.gpu = gpu;
        hardware.num_gpus = num_gpus;
        hardware.memory_used_by_others_bytes = memory_used_by_others_bytes;
        const vramplan::EngineConfig base = engine_config_from(knobs);
        const vramplan::SweepGrid grid{std::move(utilizations), std::move(max_model_lens),
                                       std::move(max_num_seqs)};
        std::vector<vramplan::SweepPoint> points;
        {
          py::gil_scoped_release release;
          points = vramplan::sweep(spec, hardware, base, grid);
        }
        // Columns, so a notebook can hand them to pandas / numpy directly.
        py::list util, length, seqs, kv_bytes, kv_tokens, concurrency, outcome;
        for (const auto& p : points) {
          util.append(p.gpu_memory_utilization);
          length.append(p.max_model_len);
          seqs.append(p.max_num_seqs);
          kv_bytes.append(p.kv_cache_bytes);
          kv_tokens.append(p.kv_tokens);
          concurrency.append(p.max_concurrency);
          outcome.append(p.outcome < 0
                             ? std::string("rejected")
                             : vramplan::outcome_name(static_cast<vramplan::Outcome>(p.outcome)));
        }
        py::dict out;
        out["gpu_memory_utilization"] = util;
        out["max_model_len"] = length;
        out["max_num_seqs"] = seqs;
        out["kv_cache_bytes"] = kv_bytes;
        out["kv_tokens"] = kv_tokens;
        out["max_concurrency"] = concurrency;
        out["outcome"] = outcome;
        return out;
      },
      py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("gpu_memory_utilization"),
      py::arg("max_model_len"), py::arg("max_num_seqs"), py::arg("num_gpus") = 1,
      py::arg("memory_used_by_others_bytes") = 0);
}

}  // namespace vramplan_py
