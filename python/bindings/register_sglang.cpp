// vramplan._core's SGLang entry points: breakdown, plan (the solver) and sweep (its log reader
// and diagnosis are the per-engine calls of register_engine_calls.cpp).
// Knobs cross as a dict of SGLang's ServerArgs names, each checked by the SGLang knob table;
// results are plain dicts from the core's JSON renderers.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "register.hpp"
#include "vramplan/engine_descriptor.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_knobs.hpp"
#include "vramplan/solver.hpp"

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
  const vramplan::EngineRelease release = vramplan::engine_descriptor("sglang").release(r.version);
  j["sglang_version"] = release.version;
  j["rules_release"] = release.rules_release;
  j["version_note"] = release.note.empty() ? nlohmann::json(nullptr) : nlohmann::json(release.note);
}

// sglang_sweep's output columns, each written in place by the core: a writable, contiguous
// one-dimensional array of T of at least `rows` rows after `row_offset` (never a converted copy).
template <typename T>
T* column_rows(const py::dict& out, const char* name, std::int64_t row_offset, std::int64_t rows) {
  const std::string field = std::string("out[\"") + name + "\"]";
  if (!out.contains(name)) {
    throw vramplan::ConfigError(field, "missing", "an array", "no such column");
  }
  const py::object value = out[name];
  if (!py::isinstance<py::array_t<T>>(value)) {
    throw vramplan::ConfigError(field, py::str(py::type::of(value)), "a NumPy array",
                                "not an array of the column's type");
  }
  auto array = py::reinterpret_borrow<py::array>(value);
  if (!array.dtype().is(py::dtype::of<T>()) || array.ndim() != 1 || !array.writeable() ||
      (array.flags() & py::array::c_style) == 0) {
    throw vramplan::ConfigError(
        field, py::str(array.dtype()),
        "a writable contiguous 1-D array of " + std::string(py::str(py::dtype::of<T>())),
        "cannot be written in place");
  }
  if (row_offset < 0 || array.shape(0) - row_offset < rows) {
    throw vramplan::ConfigError(field, std::to_string(array.shape(0)) + " rows",
                                ">= " + std::to_string(row_offset) + " + " + std::to_string(rows),
                                "too short for the rows written");
  }
  return static_cast<T*>(array.mutable_data()) + row_offset;
}

// The columns of an SGLang sweep of `rows` rows, unfilled.
py::dict sglang_sweep_columns(std::int64_t rows) {
  if (rows < 0 || rows > vramplan::kMaxSweepPoints) {
    throw vramplan::ConfigError("rows", std::to_string(rows),
                                "0 to " + std::to_string(vramplan::kMaxSweepPoints),
                                "not a sweep size");
  }
  const auto n = static_cast<py::ssize_t>(rows);
  py::dict d;
  d["mem_fraction_static"] = py::array_t<double>(n);
  d["context_length"] = py::array_t<std::int64_t>(n);
  d["max_running_requests"] = py::array_t<std::int64_t>(n);
  d["chunked_prefill_size"] = py::array_t<std::int64_t>(n);
  d["kv_pool_bytes"] = py::array_t<std::int64_t>(n);
  d["max_total_num_tokens"] = py::array_t<std::int64_t>(n);
  d["verdict"] = py::array_t<std::int8_t>(n);
  return d;
}

}  // namespace

void register_sglang(py::module_& m) {
  py::list verdicts;
  for (const auto v :
       {vramplan::SglangVerdict::Started, vramplan::SglangVerdict::WeightsLeaveNoMemory,
        vramplan::SglangVerdict::NotEnoughMemory, vramplan::SglangVerdict::OomGraphCapture,
        vramplan::SglangVerdict::OomFirstPrefill, vramplan::SglangVerdict::HicacheRefused}) {
    verdicts.append(vramplan::sglang_verdict_name(v));
  }
  // The verdict names in code order: sglang_sweep's verdict column indexes this list.
  m.attr("SGLANG_VERDICTS") = verdicts;
  m.def("sglang_sweep_columns", &sglang_sweep_columns, py::arg("rows"),
        "The output columns of an SGLang sweep of `rows` rows, unfilled (NumPy arrays).");
  m.def(
      "sglang_sweep",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         std::vector<double> mem_fraction_static, std::vector<std::int64_t> context_length,
         std::vector<std::int64_t> max_running_requests,
         std::vector<std::int64_t> chunked_prefill_size, const py::dict& out,
         std::int64_t row_offset) {
        const SglangRequest r = request_from(spec, knobs, "");
        const vramplan::SglangSweepGrid grid{
            std::move(mem_fraction_static), std::move(context_length),
            std::move(max_running_requests), std::move(chunked_prefill_size)};
        const std::int64_t rows = vramplan::sglang_sweep_size(grid);
        const vramplan::SglangSweepColumns into{
            column_rows<double>(out, "mem_fraction_static", row_offset, rows),
            column_rows<std::int64_t>(out, "context_length", row_offset, rows),
            column_rows<std::int64_t>(out, "max_running_requests", row_offset, rows),
            column_rows<std::int64_t>(out, "chunked_prefill_size", row_offset, rows),
            column_rows<std::int64_t>(out, "kv_pool_bytes", row_offset, rows),
            column_rows<std::int64_t>(out, "max_total_num_tokens", row_offset, rows),
            column_rows<std::int8_t>(out, "verdict", row_offset, rows)};
        {
          py::gil_scoped_release release;
          const vramplan::SglangTable& table = vramplan::sglang_table();
          vramplan::sglang_sweep(spec, gpu, vramplan::sglang_rules(table, r.version), r.config,
                                 grid, into);
        }
        return rows;
      },
      py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("mem_fraction_static"),
      py::arg("context_length"), py::arg("max_running_requests"), py::arg("chunked_prefill_size"),
      py::arg("out"), py::arg("row_offset") = 0,
      "Every combination of the listed values (an empty list keeps the launch's own), nested "
      "in that order, evaluated in C++ without the GIL into rows [row_offset, row_offset + "
      "rows) of `out` (sglang_sweep_columns): each row what sglang_breakdown reports at that "
      "point (the knobs as resolved, kv_pool_bytes, max_total_num_tokens, the verdict's index "
      "in SGLANG_VERDICTS). Returns the rows written.");
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
      "(SGLang's ServerArgs names, see engine_row(\"sglang\")): baseline, weights, "
      "mem_fraction_static, KV pool and max_total_num_tokens, req_to_token, the slack's "
      "consumers and the verdict, as a dict.");
  m.def(
      "sglang_plan",
      [](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu, const py::dict& knobs,
         const std::string& model_path, std::int64_t context, std::int64_t concurrency,
         std::int64_t safety_margin_bytes) {
        const SglangRequest r = request_from(spec, knobs, model_path);
        vramplan::SglangTargets targets;
        targets.context_tokens = context;
        targets.concurrency = concurrency;
        targets.safety_margin_bytes = safety_margin_bytes;
        nlohmann::json j;
        {
          py::gil_scoped_release release;
          const vramplan::SglangTable& table = vramplan::sglang_table();
          const vramplan::SglangPlan plan = vramplan::sglang_plan(
              spec, gpu, vramplan::sglang_rules(table, r.version), r.config, targets);
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
      py::arg("context") = 0, py::arg("concurrency") = 0,
      py::arg("safety_margin_bytes") = vramplan::kDefaultSafetyMarginBytes,
      "The launch as written judged; the largest mem_fraction_static, max_running_requests, "
      "context_length, chunked_prefill_size and cuda_graph_max_bs that start (each with the "
      "others as given); the planned launch (pinned knobs kept, mem_fraction_static the largest "
      "that leaves `safety_margin_bytes` in the slack, context_length `context` where unset) "
      "judged against holding `concurrency` sequences of that context, with remedies when it "
      "does not fit, as a dict.");
  m.def(
      "sglang_equivalent_knob",
      [](const std::string& vllm_name) {
        return std::string(vramplan::sglang_equivalent_of_vllm_knob(vllm_name));
      },
      py::arg("vllm_name"),
      "SGLang's knob nearest in meaning to a vLLM knob name ('' where SGLang has none).");
}

}  // namespace vramplan_py
