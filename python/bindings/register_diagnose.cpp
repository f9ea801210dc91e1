// vramplan._core.read_host_oom: a host OOM kill set against the plan's host need (the
// diagnosis itself is diagnose_log, register_engine_calls.cpp).
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
