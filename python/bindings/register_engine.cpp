// The engine, solver and sweep as typed classes: a compiled launch (`Launch`), its
// `Breakdown`, `Plan`, `RankBreakdown`, `HostBreakdown`, `Term` and `Remedy`, with read-only
// properties; JSON only when asked (to_json). Knobs cross as a dict parsed by the C++ knob
// registry, which checks every value.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "register.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine_descriptor.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/render.hpp"
#include "vramplan/solver.hpp"

namespace py = pybind11;

namespace vramplan_py {

using vramplan::ConfigError;
using vramplan::EngineConfig;
using vramplan::KnobValue;

KnobValue knob_value(const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return KnobValue{value.cast<bool>()};
  if (py::isinstance<py::int_>(value)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow != 0) {
      throw ConfigError(name, py::str(value), "an integer that fits in 64 bits", "too large");
    }
    return KnobValue{static_cast<std::int64_t>(v)};
  }
  if (py::isinstance<py::float_>(value)) return KnobValue{value.cast<double>()};
  if (py::isinstance<py::str>(value)) return KnobValue{value.cast<std::string>()};
  throw ConfigError(name, py::repr(value).cast<std::string>(), "a number, bool or str",
                    "wrong type for an engine knob");
}

// Python dict of vLLM knob names -> EngineConfig through the registry. None = unset.
EngineConfig engine_config_from(const py::dict& knobs) {
  EngineConfig c;
  for (const auto& item : knobs) {
    const std::string key = py::str(item.first);
    const py::handle value = item.second;
    if (key == "speculative_model" && py::isinstance<vramplan::ModelSpec>(value)) {
      // Python resolves ids and paths; the core takes the drafter's spec.
      c.draft_model =
          std::make_shared<const vramplan::ModelSpec>(value.cast<vramplan::ModelSpec>());
      continue;
    }
    const vramplan::KnobSpec& knob = vramplan::knob_spec(key);
    if (value.is_none()) {
      knob.set(c, std::nullopt);
    } else {
      vramplan::set_knob(c, key, knob_value(key, value));
    }
  }
  return c;
}

// Only the evaluated knobs may vary without recompiling the launch.
EngineConfig evaluated_config_from(const py::dict& knobs) {
  for (const auto& item : knobs) {
    const std::string key = py::str(item.first);
    if (!vramplan::is_evaluated_knob(key)) {
      throw ConfigError(key, py::str(item.second), vramplan::evaluated_knob_names(),
                        "changes the compiled launch: compile a new Launch for it");
    }
  }
  return engine_config_from(knobs);
}

namespace {

py::list knob_table(const std::vector<vramplan::KnobSpec>& knobs) {
  py::list out;
  for (const vramplan::KnobSpec& k : knobs) {
    py::dict row;
    row["name"] = std::string(k.name);
    row["type"] = vramplan::knob_type_name(k.type);
    row["unit"] = std::string(k.unit);
    row["minimum"] = k.minimum;
    row["maximum"] = k.maximum;
    py::list choices;
    std::string_view rest = k.choices;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      choices.append(std::string(rest.substr(0, comma)));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    row["choices"] = choices;
    row["default"] = vramplan::knob_default_text(k);
    row["help"] = std::string(k.help);
    row["flag"] = std::string(k.flag);
    row["kwarg"] = std::string(k.kwarg);
    row["flag_unit_bytes"] = k.flag_unit_bytes;
    row["evaluated"] = k.evaluated;
    row["env_var"] = std::string(k.env_var);
    row["sweep_axis"] = k.sweep_axis;
    out.append(row);
  }
  return out;
}

std::int64_t min_kv_cache_bytes(const vramplan::Breakdown& b) {
  std::int64_t out = b.ranks.front().kv_cache_bytes;
  for (const auto& r : b.ranks) out = std::min(out, r.kv_cache_bytes);
  return out;
}

// One sweep column, owned by its NumPy array through a capsule. A column of 2 MiB or more is
// aligned to 2 MiB and advised as huge pages where Linux gives them, so that the first write
// faults once per 2 MiB rather than once per 4 KiB page.
template <typename T>
py::array_t<T> sweep_column(std::int64_t rows) {
  constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
  constexpr std::size_t kCacheLineBytes = 64;
  const std::size_t bytes = std::max<std::size_t>(1, static_cast<std::size_t>(rows) * sizeof(T));
  const std::size_t alignment = bytes >= kHugePageBytes ? kHugePageBytes : kCacheLineBytes;
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, rounded);
  if (data == nullptr) throw std::bad_alloc();
#ifdef __linux__
  // Advice only: where transparent huge pages are off the column keeps 4 KiB pages.
  if (alignment == kHugePageBytes) static_cast<void>(madvise(data, rounded, MADV_HUGEPAGE));
#endif
  const py::capsule owner(data, [](void* p) { std::free(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(rows)}, {static_cast<py::ssize_t>(sizeof(T))},
                        static_cast<T*>(data), owner);
}

// Launch.sweep_columns: the output columns of a sweep of `rows` rows, unfilled.
py::dict sweep_columns(std::int64_t rows) {
  if (rows < 0 || rows > vramplan::kMaxSweepPoints) {
    throw ConfigError("rows", std::to_string(rows),
                      "0 to " + std::to_string(vramplan::kMaxSweepPoints), "not a sweep size");
  }
  py::dict d;
  d["gpu_memory_utilization"] = sweep_column<double>(rows);
  d["max_model_len"] = sweep_column<std::int64_t>(rows);
  d["max_num_seqs"] = sweep_column<std::int64_t>(rows);
  d["max_num_batched_tokens"] = sweep_column<std::int64_t>(rows);
  d["kv_cache_bytes"] = sweep_column<std::int64_t>(rows);
  d["kv_tokens"] = sweep_column<std::int64_t>(rows);
  d["max_concurrency"] = sweep_column<double>(rows);
  d["outcome"] = sweep_column<std::int8_t>(rows);
  return d;
}

// A column of `out` for a grid of `rows` rows: a writable, contiguous one-dimensional array of
// T with at least that many rows (never a converted copy).
template <typename T>
T* column_rows(const py::dict& out, const char* name, std::int64_t rows) {
  const std::string field = std::string("out[\"") + name + "\"]";
  if (!out.contains(name)) throw ConfigError(field, "missing", "an array", "no such column");
  const py::object value = out[name];
  if (!py::isinstance<py::array>(value)) {
    throw ConfigError(field, py::str(py::type::of(value)), "a NumPy array", "not an array");
  }
  auto array = py::reinterpret_borrow<py::array>(value);
  if (!array.dtype().is(py::dtype::of<T>()) || array.ndim() != 1 || !array.writeable() ||
      (array.flags() & py::array::c_style) == 0) {
    throw ConfigError(
        field, py::str(array.dtype()),
        "a writable contiguous 1-D array of " + std::string(py::str(py::dtype::of<T>())),
        "cannot be written in place");
  }
  if (array.shape(0) < rows) {
    throw ConfigError(field, std::to_string(array.shape(0)) + " rows", ">= " + std::to_string(rows),
                      "too short for the grid's rows");
  }
  return static_cast<T*>(array.mutable_data());
}

// Launch.sweep: every listed value checked as a single knob, then the grid evaluated in C++
// without the GIL into NumPy columns: new ones, or `out` (Launch.sweep_columns of the whole
// grid), where a chunk of `points` writes its rows under every utilization, so that a sweep
// in chunks prepares each point once and writes each column once.
py::dict launch_sweep(const vramplan::CompiledLaunch& launch, const py::dict& knobs,
                      std::vector<double> gpu_memory_utilization,
                      std::vector<std::int64_t> max_model_len,
                      std::vector<std::int64_t> max_num_seqs,
                      std::vector<std::int64_t> max_num_batched_tokens,
                      const std::optional<py::dict>& out,
                      const std::optional<std::pair<std::int64_t, std::int64_t>>& points) {
  const vramplan::LaunchKnobs base = vramplan::launch_knobs(
      vramplan::with_evaluated_knobs(launch.config(), evaluated_config_from(knobs)));
  vramplan::SweepGrid grid{std::move(gpu_memory_utilization), std::move(max_model_len),
                           std::move(max_num_seqs), std::move(max_num_batched_tokens)};
  // Every listed value passes the same checks as a single knob.
  EngineConfig probe;
  for (double u : grid.gpu_memory_utilization) {
    vramplan::set_knob(probe, "gpu_memory_utilization", u);
  }
  for (auto [name, values] : {std::pair{"max_model_len", &grid.max_model_len},
                              std::pair{"max_num_seqs", &grid.max_num_seqs},
                              std::pair{"max_num_batched_tokens", &grid.max_num_batched_tokens}}) {
    for (std::int64_t v : *values) vramplan::set_knob(probe, name, v);
  }
  const std::int64_t rows = vramplan::sweep_size(grid);
  vramplan::SweepPointRange range;
  if (points) {
    const auto count = [](const auto& axis) { return std::max<std::int64_t>(1, axis.size()); };
    const std::int64_t all =
        count(grid.max_model_len) * count(grid.max_num_seqs) * count(grid.max_num_batched_tokens);
    const auto [begin, end] = *points;
    if (begin < 0 || begin > end || end > all) {
      throw ConfigError("points", "(" + std::to_string(begin) + ", " + std::to_string(end) + ")",
                        "0 <= begin <= end <= " + std::to_string(all),
                        "not a range of the grid's points");
    }
    range = {static_cast<std::size_t>(begin), static_cast<std::size_t>(end)};
  }
  py::dict columns = out ? *out : sweep_columns(rows);  // not const: returned by move
  const vramplan::SweepColumns into{
      column_rows<double>(columns, "gpu_memory_utilization", rows),
      column_rows<std::int64_t>(columns, "max_model_len", rows),
      column_rows<std::int64_t>(columns, "max_num_seqs", rows),
      column_rows<std::int64_t>(columns, "max_num_batched_tokens", rows),
      column_rows<std::int64_t>(columns, "kv_cache_bytes", rows),
      column_rows<std::int64_t>(columns, "kv_tokens", rows),
      column_rows<double>(columns, "max_concurrency", rows),
      column_rows<std::int8_t>(columns, "outcome", rows)};
  {
    py::gil_scoped_release release;
    vramplan::sweep(launch, base, grid, into, range);
  }
  return columns;
}

void register_knobs(py::module_& m) {
  m.attr("KNOBS") = knob_table(vramplan::knob_specs());
  m.attr("MAX_SWEEP_POINTS") = vramplan::kMaxSweepPoints;
  m.def(
      "knob_bounds",
      [](const std::string& name, const vramplan::ModelSpec& spec) {
        const vramplan::KnobBounds b = vramplan::knob_bounds(vramplan::knob_spec(name), spec);
        return py::make_tuple(b.minimum, b.maximum);
      },
      py::arg("name"), py::arg("spec"),
      "The knob's (minimum, maximum) for this model (max_model_len: up to the model's "
      "max_position_embeddings).");
}

// The engines the planner models, from their descriptors (engine_descriptor.hpp): the names as
// a constant, a row on demand (a row's knob table states its release defaults, which reads that
// engine's rules file: a vLLM plan need not parse SGLang's).
void register_engines(py::module_& m) {
  py::list names;
  for (const vramplan::EngineDescriptor& e : vramplan::engine_descriptors()) {
    names.append(std::string(e.name));
  }
  m.attr("ENGINE_NAMES") = py::tuple(names);
  m.def(
      "engine_row",
      [](const std::string& name) {
        const vramplan::EngineDescriptor& e = vramplan::engine_descriptor(name);
        py::dict row;
        row["name"] = std::string(e.name);
        row["display_name"] = std::string(e.display_name);
        row["serve_command"] = std::string(e.serve_command);
        row["python_entry"] = std::string(e.python_entry);
        row["rules_file"] = std::string(e.rules_file);
        row["newest_known_version"] = e.newest_known_version();
        row["knobs"] = knob_table(e.knobs());
        return row;
      },
      py::arg("name"),
      "The descriptor of the engine `name` (one of ENGINE_NAMES): display name, serve command, "
      "Python entry point, rules file, newest known release and knob table.");
}

void register_terms(py::module_& m) {
  py::class_<vramplan::Term>(m, "Term", "One term of a breakdown: bytes and how we know them.")
      .def_readonly("name", &vramplan::Term::name)
      .def_readonly("bytes", &vramplan::Term::bytes)
      .def_readonly("provenance", &vramplan::Term::provenance)
      .def("__repr__", [](const vramplan::Term& t) {
        return "Term(" + std::string(t.name) + ", " + std::to_string(t.bytes) + " B)";
      });

  using vramplan::RankBreakdown;
  py::class_<RankBreakdown>(m, "RankBreakdown", "One pipeline stage (TP ranks are symmetric).")
      .def_readonly("pipeline_rank", &RankBreakdown::pipeline_rank)
      .def_readonly("total_memory_bytes", &RankBreakdown::total_memory_bytes)
      .def_readonly("requested_memory_bytes", &RankBreakdown::requested_memory_bytes)
      .def_readonly("weights_bytes", &RankBreakdown::weights_bytes)
      .def_readonly("lora_bytes", &RankBreakdown::lora_bytes)
      .def_readonly("activation_peak_bytes", &RankBreakdown::activation_peak_bytes)
      .def_readonly("non_torch_bytes", &RankBreakdown::non_torch_bytes)
      .def_readonly("cudagraph_bytes", &RankBreakdown::cudagraph_bytes)
      .def_readonly("cuda_context_bytes", &RankBreakdown::cuda_context_bytes)
      .def_readonly("kv_cache_bytes", &RankBreakdown::kv_cache_bytes)
      .def_readonly("kv_bytes_per_token", &RankBreakdown::kv_bytes_per_token)
      .def_readonly("num_blocks", &RankBreakdown::num_blocks)
      .def_readonly("headroom_bytes", &RankBreakdown::headroom_bytes)
      .def_readonly("post_allocation_bytes", &RankBreakdown::post_allocation_bytes)
      .def_readonly("persistent_buffers_bytes", &RankBreakdown::persistent_buffers_bytes)
      .def_property_readonly("block_size",
                             [](const RankBreakdown& r) { return r.kv_layout.block_size; })
      .def_property_readonly("kv_page_bytes",
                             [](const RankBreakdown& r) { return r.kv_layout.page_bytes; })
      .def_readonly("terms", &RankBreakdown::terms);

  using vramplan::HostBreakdown;
  py::class_<HostBreakdown>(m, "HostBreakdown", "Host RAM per node while loading and serving.")
      .def_readonly("process_baseline_bytes", &HostBreakdown::process_baseline_bytes)
      .def_readonly("loader_anonymous_bytes", &HostBreakdown::loader_anonymous_bytes)
      .def_readonly("page_cache_bytes", &HostBreakdown::page_cache_bytes)
      .def_readonly("pinned_bytes", &HostBreakdown::pinned_bytes)
      .def_readonly("input_batch_bytes", &HostBreakdown::input_batch_bytes)
      .def_readonly("sleep_backup_bytes", &HostBreakdown::sleep_backup_bytes)
      .def_readonly("required_bytes", &HostBreakdown::required_bytes)
      .def_readonly("terms", &HostBreakdown::terms);
}

void register_breakdown(py::module_& m) {
  using vramplan::Breakdown;
  py::class_<Breakdown>(m, "Breakdown", "What vLLM's startup profiling will find, per rank.")
      .def_readonly("model_id", &Breakdown::model_id)
      .def_readonly("gpu_id", &Breakdown::gpu_id)
      .def_property_readonly("engine_version",
                             [](const Breakdown& b) { return b.profile().version; })
      .def_property_readonly("engine_version_warning",
                             [](const Breakdown& b) -> std::optional<std::string> {
                               if (b.profile().version_warning.empty()) return std::nullopt;
                               return b.profile().version_warning;
                             })
      .def_property_readonly("model_runner",
                             [](const Breakdown& b) { return b.model_runner_v2 ? "v2" : "v1"; })
      .def_property_readonly(
          "engine_era",
          [](const Breakdown& b) { return vramplan::engine_era_name(b.profile().era); })
      .def_readonly("ranks", &Breakdown::ranks)
      .def_readonly("host", &Breakdown::host)
      .def_readonly("num_blocks", &Breakdown::num_blocks)
      .def_readonly("kv_tokens", &Breakdown::kv_tokens)
      .def_readonly("max_concurrency", &Breakdown::max_concurrency)
      .def_readonly("request_kv_bytes", &Breakdown::request_kv_bytes)
      .def_readonly("estimated_max_model_len", &Breakdown::estimated_max_model_len)
      .def_readonly("startup_free_bytes", &Breakdown::startup_free_bytes)
      .def_readonly("messages", &Breakdown::messages)
      .def_property_readonly("outcome",
                             [](const Breakdown& b) { return vramplan::outcome_name(b.outcome); })
      .def_property_readonly("gpu_memory_utilization",
                             [](const Breakdown& b) { return b.config.gpu_memory_utilization; })
      .def_property_readonly("max_model_len",
                             [](const Breakdown& b) { return b.config.max_model_len; })
      .def_property_readonly("max_num_seqs",
                             [](const Breakdown& b) { return b.config.max_num_seqs; })
      .def_property_readonly("max_num_batched_tokens",
                             [](const Breakdown& b) { return b.config.max_num_batched_tokens; })
      .def_property_readonly("block_size", [](const Breakdown& b) { return b.config.block_size; })
      .def_property_readonly("num_cudagraph_sizes",
                             [](const Breakdown& b) { return b.config.num_cudagraph_sizes; })
      // Headline figures: the first rank's terms, the worst rank's KV cache.
      .def_property_readonly("weights_bytes",
                             [](const Breakdown& b) { return b.ranks.front().weights_bytes; })
      .def_property_readonly("kv_bytes_per_token",
                             [](const Breakdown& b) { return b.ranks.front().kv_bytes_per_token; })
      .def_property_readonly("kv_cache_bytes", &min_kv_cache_bytes)
      .def("to_json", [](const Breakdown& b) { return vramplan::to_json(b).dump(); });
}

void register_plan(py::module_& m) {
  using vramplan::KnobChange;
  py::class_<KnobChange>(m, "KnobChange",
                         "One knob set to a value (vLLM's keyword, the flag's text), and why.")
      .def_readonly("knob", &KnobChange::knob)
      .def_readonly("value", &KnobChange::value)
      .def_readonly("before", &KnobChange::before)
      .def_readonly("reason", &KnobChange::reason);

  using vramplan::Remedy;
  py::class_<Remedy>(m, "Remedy", "A change that makes the launch fit, with its full flags.")
      .def_readonly("kind", &Remedy::kind)
      .def_readonly("change", &Remedy::change)
      .def_readonly("changes", &Remedy::changes)
      .def_readonly("drops", &Remedy::drops)
      .def_readonly("fits", &Remedy::fits)
      .def_readonly("detail", &Remedy::detail)
      .def_readonly("flags", &Remedy::flags);

  using vramplan::Plan;
  py::class_<Plan>(m, "Plan", "The solver's answer: the largest safe knobs and why.")
      .def_readonly("as_written_fits", &Plan::as_written_fits)
      .def_readonly("as_written_verdict", &Plan::as_written_verdict)
      .def_property_readonly(
          "as_written_outcome",
          [](const Plan& p) { return vramplan::outcome_name(p.as_written_outcome); })
      .def_readonly("fits", &Plan::fits)
      .def_readonly("verdict", &Plan::verdict)
      .def_property_readonly("engine_version_warning",
                             [](const Plan& p) -> std::optional<std::string> {
                               if (p.breakdown.profile().version_warning.empty())
                                 return std::nullopt;
                               return p.breakdown.profile().version_warning;
                             })
      .def_readonly("changed", &Plan::changed)
      .def_readonly("gpu_memory_utilization", &Plan::gpu_memory_utilization)
      .def_readonly("max_model_len", &Plan::max_model_len)
      .def_readonly("max_num_seqs", &Plan::max_num_seqs)
      .def_readonly("max_num_batched_tokens", &Plan::max_num_batched_tokens)
      .def_readonly("concurrent_sequences", &Plan::concurrent_sequences)
      .def_readonly("max_concurrency", &Plan::max_concurrency)
      .def_readonly("runtime_headroom_bytes", &Plan::runtime_headroom_bytes)
      .def_property_readonly(
          "workload",
          [](const Plan& p) -> py::object {
            if (!p.workload.present) return py::none();
            return py::module_::import("json").attr("loads")(vramplan::to_json(p.workload).dump());
          })
      .def_readonly("safety_margin_bytes", &Plan::safety_margin_bytes)
      .def_property_readonly("binding",
                             [](const Plan& p) {
                               py::dict d;
                               d["gpu_memory_utilization"] = p.binding_gpu_memory_utilization;
                               d["max_model_len"] = p.binding_max_model_len;
                               d["max_num_seqs"] = p.binding_max_num_seqs;
                               d["max_num_batched_tokens"] = p.binding_max_num_batched_tokens;
                               return d;
                             })
      .def_readonly("breakdown", &Plan::breakdown)
      .def_readonly("remedies", &Plan::remedies)
      .def("vllm_args", [](const Plan& p) { return vramplan::to_vllm_args(p); })
      .def("vllm_argv", [](const Plan& p) { return vramplan::to_vllm_argv(p); })
      .def("llm_kwargs", [](const Plan& p) { return to_python(vramplan::to_llm_kwargs(p)); })
      .def("vllm_env", [](const Plan& p) { return to_python(vramplan::to_vllm_env(p)); })
      .def("to_json", [](const Plan& p) { return vramplan::to_json(p).dump(); });
}

void register_engine_profile(py::module_& m) {
  using vramplan::EngineProfile;
  py::class_<EngineProfile, std::shared_ptr<EngineProfile>>(
      m, "EngineProfile", "A vLLM version's accounting rules (engines.yaml row), maybe calibrated.")
      .def_readonly("version", &EngineProfile::version)
      .def_property_readonly(
          "era", [](const EngineProfile& p) { return vramplan::engine_era_name(p.era); })
      .def_readonly("default_gpu_memory_utilization",
                    &EngineProfile::default_gpu_memory_utilization)
      .def_readonly("cuda_context_bytes", &EngineProfile::cuda_context_bytes)
      .def_readonly("nccl_communicator_bytes", &EngineProfile::nccl_communicator_bytes)
      .def_readonly("forward_hidden_buffers", &EngineProfile::forward_hidden_buffers)
      .def_readonly("sampler_bytes_per_logit", &EngineProfile::sampler_bytes_per_logit)
      .def_readonly("non_torch_single_rank_bytes", &EngineProfile::non_torch_single_rank_bytes)
      .def_readonly("non_torch_pipeline_only_bytes", &EngineProfile::non_torch_pipeline_only_bytes)
      .def_readonly("non_torch_tensor_parallel_bytes",
                    &EngineProfile::non_torch_tensor_parallel_bytes)
      .def_readonly("non_torch_tensor_parallel_pcie_bytes",
                    &EngineProfile::non_torch_tensor_parallel_pcie_bytes)
      .def_readonly("cudagraph_base_mib", &EngineProfile::cudagraph_base_mib)
      .def_readonly("cudagraph_piece_mib", &EngineProfile::cudagraph_piece_mib)
      .def_readonly("cudagraph_piece_mib_moe", &EngineProfile::cudagraph_piece_mib_moe)
      .def_readonly("cudagraph_piece_mib_mla", &EngineProfile::cudagraph_piece_mib_mla)
      .def_readonly("cudagraph_piece_mib_mxfp4_moe", &EngineProfile::cudagraph_piece_mib_mxfp4_moe)
      .def_readonly("full_cudagraph_attention_splits",
                    &EngineProfile::full_cudagraph_attention_splits)
      .def_readonly("cudagraph_in_budget", &EngineProfile::cudagraph_in_budget)
      .def_readonly("version_warning", &EngineProfile::version_warning);
  m.def("newest_known_vllm_version", &vramplan::newest_known_vllm_version,
        "The newest vLLM release the compiled-in engines.yaml rows describe.");
  m.def(
      "engine_profile",
      [](const std::string& version) { return vramplan::engine_profile(version); },
      py::arg("version") = "", "The engines.yaml row for a vLLM version (empty: newest).");
  m.def(
      "apply_profile_overrides",
      [](const EngineProfile& base, const std::string& yaml_text, const std::string& file) {
        return vramplan::apply_profile_overrides(base, yaml_text, file);
      },
      py::arg("base"), py::arg("yaml_text"), py::arg("file"),
      "A calibration profile (`overrides:` map of engines.yaml fields) applied over `base`.");
}

void register_launch(py::module_& m) {
  using vramplan::CompiledLaunch;
  using vramplan::EngineProfile;
  py::class_<CompiledLaunch, std::shared_ptr<CompiledLaunch>>(
      m, "Launch",
      "A launch compiled once (model, GPU, parallelism, formats, engine version); evaluate, "
      "solve and sweep the other knobs without recompiling.")
      .def(py::init([](const vramplan::ModelSpec& spec, const vramplan::GpuSpec& gpu,
                       const py::dict& knobs, std::int32_t num_gpus,
                       std::int64_t memory_used_by_others_bytes, std::int64_t host_ram_bytes,
                       std::shared_ptr<EngineProfile> profile) {
             vramplan::HardwareConfig hardware;
             hardware.gpu = gpu;
             hardware.num_gpus = num_gpus;
             hardware.memory_used_by_others_bytes = memory_used_by_others_bytes;
             hardware.host_ram_bytes = host_ram_bytes;
             EngineConfig config = engine_config_from(knobs);
             config.profile = std::move(profile);
             auto shared = std::make_shared<const vramplan::ModelSpec>(spec);
             py::gil_scoped_release release;
             return std::make_shared<CompiledLaunch>(std::move(shared), std::move(hardware),
                                                     std::move(config));
           }),
           py::arg("spec"), py::arg("gpu"), py::arg("knobs"), py::arg("num_gpus") = 1,
           py::arg("memory_used_by_others_bytes") = 0, py::arg("host_ram_bytes") = 0,
           py::arg("profile") = nullptr)
      .def(
          "breakdown",
          [](const CompiledLaunch& launch, const py::dict& knobs) {
            const EngineConfig evaluated =
                vramplan::with_evaluated_knobs(launch.config(), evaluated_config_from(knobs));
            const vramplan::LaunchKnobs launch_knobs = vramplan::launch_knobs(evaluated);
            py::gil_scoped_release release;
            return launch.breakdown(launch_knobs);
          },
          py::arg("knobs"))
      .def(
          "solve",
          [](const CompiledLaunch& launch, const py::dict& knobs, std::int64_t context,
             std::int64_t concurrency, std::int64_t safety_margin_bytes,
             std::int64_t runtime_headroom_bytes, const py::object& workload) {
            const EngineConfig evaluated = evaluated_config_from(knobs);
            vramplan::SolveTargets targets;
            targets.context_tokens = context;
            targets.concurrency = concurrency;
            if (safety_margin_bytes >= 0) targets.safety_margin_bytes = safety_margin_bytes;
            targets.runtime_headroom_bytes = runtime_headroom_bytes;
            // An object, not a Workload pointer: pybind11 refuses None for a pointer on its
            // first pass and retries every argument (a third of a plan's binding cost).
            if (!workload.is_none()) {
              if (!py::isinstance<vramplan::Workload>(workload)) {
                throw py::type_error("workload: a vramplan Workload or None");
              }
              targets.workload = workload.cast<const vramplan::Workload&>();
            }
            py::gil_scoped_release release;
            // Made in the holder's own storage: returned by value, pybind11 moved the whole
            // Plan (its breakdown and texts) into a new one and freed the first.
            return std::unique_ptr<vramplan::Plan>(
                new vramplan::Plan(vramplan::solve(launch, evaluated, targets)));
          },
          py::arg("knobs"), py::arg("context") = 0, py::arg("concurrency") = 0,
          py::arg("safety_margin_bytes") = -1, py::arg("runtime_headroom_bytes") = -1,
          py::arg("workload") = py::none())
      .def(
          "preemption_probability",
          [](const CompiledLaunch& launch, const py::dict& knobs,
             const vramplan::Workload& workload, std::int64_t max_num_seqs) {
            const EngineConfig evaluated = evaluated_config_from(knobs);
            return vramplan::preemption_probability(launch, evaluated, workload, max_num_seqs);
          },
          py::arg("knobs"), py::arg("workload"), py::arg("max_num_seqs"))
      .def("sweep", &launch_sweep, py::arg("knobs"), py::arg("gpu_memory_utilization"),
           py::arg("max_model_len"), py::arg("max_num_seqs"), py::arg("max_num_batched_tokens"),
           py::arg("out") = py::none(), py::arg("points") = py::none())
      .def_static("sweep_columns", &sweep_columns, py::arg("rows"));
}

void register_outcomes(py::module_& m) {
  m.def("outcome_names", [] {
    py::list names;
    for (int i = 0; i <= static_cast<int>(vramplan::Outcome::StateBlocksBelowMaxNumSeqs); ++i) {
      names.append(vramplan::outcome_name(static_cast<vramplan::Outcome>(i)));
    }
    return names;
  });
}

}  // namespace

// Registration order matters where a signature names another class (Plan -> Breakdown,
// Launch -> EngineProfile).
void register_engine(py::module_& m) {
  register_knobs(m);
  register_engines(m);
  register_terms(m);
  register_breakdown(m);
  register_plan(m);
  register_engine_profile(m);
  register_launch(m);
  register_outcomes(m);
}

}  // namespace vramplan_py
