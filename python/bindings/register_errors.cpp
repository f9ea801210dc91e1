#include "register.hpp"
#include "vramplan/errors.hpp"

namespace py = pybind11;

namespace vramplan_py {

pybind11::object to_python(const nlohmann::json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

void register_errors(py::module_& m) {
  // Base first, subtypes after: pybind11 tries translators in reverse registration order.
  static py::exception<vramplan::Error> error(m, "Error", PyExc_ValueError);
  static py::exception<vramplan::SpecError> spec_error(m, "SpecError", error.ptr());
  static py::exception<vramplan::ParseError> parse_error(m, "ParseError", error.ptr());
  static py::exception<vramplan::ConfigError> config_error(m, "ConfigError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const vramplan::SpecError& e) {
      py::object exc = spec_error(e.what());
      exc.attr("file") = e.file();
      exc.attr("field_path") = e.field_path();
      exc.attr("value") = e.value();
      PyErr_SetObject(spec_error.ptr(), exc.ptr());
    } catch (const vramplan::ParseError& e) {
      py::object exc = parse_error(e.what());
      exc.attr("file") = e.file();
      exc.attr("offset") = e.offset();
      PyErr_SetObject(parse_error.ptr(), exc.ptr());
    } catch (const vramplan::ConfigError& e) {
      py::object exc = config_error(e.what());
      exc.attr("field") = e.field();
      exc.attr("value") = e.value();
      exc.attr("allowed") = e.allowed();
      PyErr_SetObject(config_error.ptr(), exc.ptr());
    } catch (const vramplan::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
}

}  // namespace vramplan_py
