// Workloads (request shapes from a file, a list or two percentiles) and the overflow
// probability behind max_num_seqs, for `vramplan.plan(workload=...)`, the CLI and the plots.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "register.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/workload.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_workload(py::module_& m) {
  // The solver's margin where no error band widens it (one home: kDefaultSafetyMarginBytes).
  m.attr("DEFAULT_SAFETY_MARGIN_BYTES") = vramplan::kDefaultSafetyMarginBytes;
  // The acceptable overflow probability where a workload states none.
  m.attr("DEFAULT_PREEMPTION_TARGET") = vramplan::Workload{}.preemption_target;
  using vramplan::Workload;
  py::class_<Workload>(m, "Workload", "The request shapes a server sees, as a distribution.")
      .def_static(
          "from_requests",
          [](const std::vector<std::int64_t>& prompts, const std::vector<std::int64_t>& outputs,
             const std::vector<double>& counts, const std::string& field) {
            if (prompts.size() != outputs.size() || prompts.size() != counts.size()) {
              throw vramplan::ConfigError(field, std::to_string(prompts.size()) + " prompts",
                                          "as many prompts, outputs and counts",
                                          "columns of different lengths");
            }
            std::vector<vramplan::RequestShape> observed;
            observed.reserve(prompts.size());
            for (std::size_t i = 0; i < prompts.size(); ++i) {
              observed.push_back({prompts[i], outputs[i], counts[i]});
            }
            py::gil_scoped_release release;
            return vramplan::workload_from_requests(observed, field);
          },
          py::arg("prompt_tokens"), py::arg("output_tokens"), py::arg("counts"),
          py::arg("field") = "workload")
      .def_static("from_percentiles", &vramplan::workload_from_percentiles, py::arg("prompt_p50"),
                  py::arg("prompt_p99"), py::arg("output_p50"), py::arg("output_p99"))
      .def_readwrite("prefix_tokens", &Workload::prefix_tokens)
      .def_readwrite("preemption_target", &Workload::preemption_target)
      .def_readwrite("request_seconds", &Workload::request_seconds)
      .def_readwrite("description", &Workload::description)
      .def_property_readonly("shapes", [](const Workload& w) {
        py::list out;
        for (const vramplan::RequestShape& s : w.shapes) {
          out.append(py::make_tuple(s.prompt_tokens, s.output_tokens, s.probability));
        }
        return out;
      });
  m.def(
      "overflow_probability",
      [](const std::vector<std::int64_t>& blocks, const std::vector<double>& probabilities,
         std::int64_t slots, std::int64_t pool_blocks, std::int64_t shared_blocks) {
        vramplan::BlockDistribution d;
        if (blocks.size() != probabilities.size() || blocks.size() > d.blocks.size()) {
          throw vramplan::ConfigError(
              "blocks", std::to_string(blocks.size()),
              "as many as probabilities, at most " + std::to_string(d.blocks.size()),
              "wrong length");
        }
        for (std::size_t i = 0; i < blocks.size(); ++i) {
          d.blocks[i] = blocks[i];
          d.probability[i] = probabilities[i];
        }
        d.count = blocks.size();
        d.shared_blocks = shared_blocks;
        return vramplan::overflow_probability(d, slots, pool_blocks);
      },
      py::arg("blocks"), py::arg("probabilities"), py::arg("slots"), py::arg("pool_blocks"),
      py::arg("shared_blocks") = 0,
      "Probability that `slots` requests with these block counts overflow `pool_blocks`.");
}

}  // namespace vramplan_py
