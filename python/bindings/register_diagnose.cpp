// vramplan._core.diagnose_launch: the failed-launch cause classifier, result as a plain dict.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "register.hpp"
#include "vramplan/diagnose.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_diagnose(py::module_& m) {
  m.def(
      "diagnose_launch",
      [](const std::string& log_text, const std::string& kernel_text) {
        std::string dumped;
        {
          // Classifying touches no Python object: let other threads run meanwhile.
          py::gil_scoped_release release;
          // Log bytes are untrusted: invalid UTF-8 in the parser's lines becomes U+FFFD.
          dumped = vramplan::to_json(vramplan::diagnose_launch(log_text, kernel_text))
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
        return py::module_::import("json").attr("loads")(dumped);
      },
      py::arg("log_text"), py::arg("kernel_text") = std::string(),
      "Name the cause of a failed vLLM launch from its log and an optional dmesg/journalctl "
      "excerpt. Returns a dict: cause (fixed vocabulary), evidence (lines), explanation, "
      "advice ([{knob, action, value}]), oom_phase, oom_other_processes_bytes, oom_kills, figures "
      "(parse_vllm_log's dict). Never "
      "raises for malformed text.");
  m.def(
      "read_host_oom",
      [](std::optional<std::int64_t> anon_rss_bytes, const vramplan::HostBreakdown& planned,
         std::int64_t workers) {
        vramplan::OomKill kill;
        kill.anon_rss_bytes = anon_rss_bytes;
        const vramplan::HostOomReading r = vramplan::read_host_oom(kill, planned, workers);
        py::dict out;
        out["planned_required_bytes"] = r.planned_required_bytes;
        out["killed_anon_bytes"] = r.killed_anon_bytes;
        out["gap_bytes"] = r.gap_bytes;
        out["checkpoint_copies"] = r.checkpoint_copies;
        out["explanation"] = r.explanation;
        return out;
      },
      py::arg("anon_rss_bytes"), py::arg("planned"), py::arg("workers"),
      "Set a host OOM kill's anonymous RSS against the plan's host breakdown for the same "
      "launch: planned_required_bytes, killed_anon_bytes, gap_bytes, checkpoint_copies and an "
      "explanation naming what can account for a difference.");
}

}  // namespace vramplan_py
