#include "register.hpp"
#include "vramplan/errors.hpp"

namespace py = pybind11;

namespace vramplan_py {
namespace {

// Python exception types, created once at import and kept for the process lifetime.
PyObject* g_error = nullptr;
PyObject* g_spec_error = nullptr;
PyObject* g_parse_error = nullptr;
PyObject* g_config_error = nullptr;

// Raise `type(message)` with structured attributes a caller can read (err.file, err.field...).
void raise_with(PyObject* type, const char* message,
                std::initializer_list<std::pair<const char*, py::object>> attributes) {
  py::object exc = py::handle(type)(message);
  for (const auto& [name, value] : attributes) exc.attr(name) = value;
  PyErr_SetObject(type, exc.ptr());
}

}  // namespace

pybind11::object to_python(const nlohmann::json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

void register_errors(py::module_& m) {
  g_error = py::exception<vramplan::Error>(m, "Error", PyExc_ValueError).release().ptr();
  g_spec_error = py::exception<vramplan::SpecError>(m, "SpecError", g_error).release().ptr();
  g_parse_error = py::exception<vramplan::ParseError>(m, "ParseError", g_error).release().ptr();
  g_config_error = py::exception<vramplan::ConfigError>(m, "ConfigError", g_error).release().ptr();
  // pybind11's translator type takes the exception_ptr by value.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const vramplan::SpecError& e) {
      raise_with(g_spec_error, e.what(),
                 {{"file", py::str(e.file())},
                  {"field_path", py::str(e.field_path())},
                  {"value", py::str(e.value())}});
    } catch (const vramplan::ParseError& e) {
      raise_with(g_parse_error, e.what(),
                 {{"file", py::str(e.file())}, {"offset", py::int_(e.offset())}});
    } catch (const vramplan::ConfigError& e) {
      raise_with(g_config_error, e.what(),
                 {{"field", py::str(e.field())},
                  {"value", py::str(e.value())},
                  {"allowed", py::str(e.allowed())}});
    } catch (const vramplan::Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace vramplan_py
