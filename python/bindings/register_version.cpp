// Engine versions as `Version`: the core's one reader and order of version strings, so Python
// compares releases without a parser of its own.
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <string>

#include "register.hpp"
#include "vramplan/version.hpp"

namespace py = pybind11;

namespace vramplan_py {

void register_version(py::module_& m) {
  using vramplan::Version;
  py::class_<Version>(m, "Version",
                      "An engine release as (major, minor, patch), ordered numerically.")
      .def(py::init([](std::int32_t major, std::int32_t minor, std::int32_t patch) {
             return Version{major, minor, patch};
           }),
           py::arg("major"), py::arg("minor"), py::arg("patch") = 0)
      .def_static("parse", &Version::parse, py::arg("text"), py::arg("field") = "version",
                  "Reads \"0.10.2\", \"v0.11.0\", \"0.4.6.post5\", \"0.9\" (patch 0); ConfigError "
                  "naming `field` and the text when it is no version.")
      .def_static(
          "read", [](const std::string& text) { return Version::read(text); }, py::arg("text"),
          "As parse, None when the text is no version.")
      .def_static(
          "find", [](const std::string& text) { return Version::find(text); }, py::arg("text"),
          "The first version in free text (\"0.8.x, not printed\"), None when there is none.")
      .def_readonly("major", &Version::major)
      .def_readonly("minor", &Version::minor)
      .def_readonly("patch", &Version::patch)
      .def(
          "__eq__",
          [](const Version& a, const py::object& b) {
            return py::isinstance<Version>(b) && a == b.cast<Version>();
          },
          py::arg("other"))
      .def(
          "__ne__",
          [](const Version& a, const py::object& b) {
            return !py::isinstance<Version>(b) || a != b.cast<Version>();
          },
          py::arg("other"))
      .def(py::self < py::self)
      .def(py::self <= py::self)
      .def(py::self > py::self)
      .def(py::self >= py::self)
      .def("__hash__", [](const Version& v) { return std::hash<std::string>{}(v.text()); })
      .def("__str__", &Version::text)
      .def("__repr__", [](const Version& v) { return "Version('" + v.text() + "')"; });
}

}  // namespace vramplan_py
