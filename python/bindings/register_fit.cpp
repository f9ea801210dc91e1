// vramplan._core.fit_options: `vramplan fit`'s vLLM option loop in one call. The options cross
// as tuples, the rows come back as the dicts fit.py ranks (its columns, in its key order).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "register.hpp"
#include "vramplan/error_band.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/fit_options.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

using vramplan::FitOption;
using vramplan::FitOptionRow;
using Quote = std::function<std::string(const std::string&)>;

std::vector<FitOption> options_from(const py::list& options) {
  std::vector<FitOption> out;
  out.reserve(options.size());
  for (const py::handle item : options) {
    const auto fields = item.cast<py::tuple>();
    if (fields.size() != 6) {
      throw vramplan::ConfigError("options", py::repr(item).cast<std::string>(),
                                  "(gpu, num_gpus, tp, pp, dp, refused)", "wrong shape");
    }
    FitOption option;
    option.gpu = &fields[0].cast<const vramplan::GpuSpec&>();
    option.num_gpus = fields[1].cast<std::int32_t>();
    option.tensor_parallel_size = fields[2].cast<std::int32_t>();
    option.pipeline_parallel_size = fields[3].cast<std::int32_t>();
    option.data_parallel_size = fields[4].cast<std::int32_t>();
    option.refused = fields[5].cast<std::string>();
    out.push_back(std::move(option));
  }
  return out;
}

// fit.launch_line's text: the environment variables (quoted by `quote`, Python's shell_word),
// then `vllm serve`, the model word and the flags.
std::string launch_line(const FitOptionRow& row, const std::string& model_word,
                        const Quote& quote) {
  std::string env;
  for (const auto& [name, value] : row.vllm_env) {
    env += (env.empty() ? "" : " ") + name + "=" + quote(value);
  }
  std::string line = "vllm serve " + model_word + " " + row.vllm_args;
  line.erase(line.find_last_not_of(" \t\n\r\f\v") + 1);
  return env.empty() ? line : env + " " + line;
}

py::dict row_dict(const FitOptionRow& row, const FitOption& option, const py::str& gpu_id,
                  std::int64_t concurrency, const std::string& model_word, const Quote& quote) {
  py::dict out;
  out["gpu"] = gpu_id;
  out["num_gpus"] = option.num_gpus;
  out["tensor_parallel_size"] = option.tensor_parallel_size;
  out["pipeline_parallel_size"] = option.pipeline_parallel_size;
  out["data_parallel_size"] = option.data_parallel_size;
  out["fits"] = row.fits;
  out["verdict"] = row.verdict;
  if (!row.valid_split) return out;
  out["max_concurrency"] = row.max_concurrency;
  out["kv_tokens"] = row.kv_tokens;
  out["gpu_memory_utilization"] = row.gpu_memory_utilization;
  out["max_model_len"] = row.max_model_len;
  out["max_num_seqs"] = row.max_num_seqs;
  out["max_num_batched_tokens"] = row.max_num_batched_tokens;
  out["launch"] = launch_line(row, model_word, quote);
  out["kv_headroom"] = static_cast<double>(row.max_concurrency) / static_cast<double>(concurrency);
  if (row.fits) out["max_context"] = row.max_context;
  return out;
}

}  // namespace

void register_fit(py::module_& m) {
  m.def(
      "fit_options",
      [](const vramplan::ModelSpec& spec, const py::dict& compiled_knobs,
         const py::dict& evaluated_knobs, const py::list& options, std::int64_t context,
         std::int64_t concurrency, std::int64_t memory_used_by_others_bytes,
         std::int64_t host_ram_bytes, const vramplan::ErrorBandTable& bands,
         const std::string& model_word, const Quote& quote,
         std::shared_ptr<vramplan::EngineProfile> profile) {
        if (concurrency < 1) {
          throw vramplan::ConfigError("concurrency", std::to_string(concurrency), ">= 1",
                                      "out of range");
        }
        vramplan::FitKnobs knobs{engine_config_from(compiled_knobs),
                                 evaluated_config_from(evaluated_knobs)};
        knobs.compiled.profile = std::move(profile);
        const std::vector<FitOption> parsed = options_from(options);
        vramplan::HardwareConfig node;
        node.memory_used_by_others_bytes = memory_used_by_others_bytes;
        node.host_ram_bytes = host_ram_bytes;
        const vramplan::FitTarget target{context, concurrency};
        const auto shared = std::make_shared<const vramplan::ModelSpec>(spec);
        std::vector<FitOptionRow> rows;
        {
          py::gil_scoped_release release;
          rows = vramplan::fit_options(shared, knobs, node, parsed, target, bands);
        }
        py::list out;
        const vramplan::GpuSpec* last_gpu = nullptr;
        py::str gpu_id;
        for (std::size_t i = 0; i < rows.size(); ++i) {
          if (parsed[i].gpu != last_gpu) {  // options come GPU by GPU: one str each
            last_gpu = parsed[i].gpu;
            gpu_id = py::str(last_gpu->id);
          }
          out.append(row_dict(rows[i], parsed[i], gpu_id, concurrency, model_word, quote));
        }
        return out;
      },
      py::arg("spec"), py::arg("compiled_knobs"), py::arg("evaluated_knobs"), py::arg("options"),
      py::arg("context"), py::arg("concurrency"), py::arg("memory_used_by_others_bytes"),
      py::arg("host_ram_bytes"), py::arg("bands"), py::arg("model_word"), py::arg("quote"),
      py::arg("profile") = nullptr,
      "fit's vLLM rows for `options`, (GpuSpec, num_gpus, TP, PP, DP, refused) tuples: each "
      "launch compiled once (the compiled knobs with the split, `profile` when given) and "
      "solved for ceil(concurrency / DP) sequences of `context` per replica at its error "
      "band's safety margin, then at context 0 for max_context where it fits. A non-empty "
      "`refused` is that option's invalid-split text; a ConfigError about a split field is "
      "too. The rows are dicts in fit's key order; `quote` shell-quotes environment values.");
}

}  // namespace vramplan_py
