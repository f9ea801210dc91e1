#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/knobs.hpp"

namespace vramplan_py {

void register_errors(pybind11::module_& m);
void register_spec(pybind11::module_& m);
void register_engine(pybind11::module_& m);
void register_engine_calls(pybind11::module_& m);
void register_readers(pybind11::module_& m);
void register_diagnose(pybind11::module_& m);
void register_calibrate(pybind11::module_& m);
void register_colocate(pybind11::module_& m);
void register_band(pybind11::module_& m);
void register_sglang(pybind11::module_& m);
void register_llamacpp(pybind11::module_& m);
void register_workload(pybind11::module_& m);
void register_version(pybind11::module_& m);
void register_fit(pybind11::module_& m);

// C++ JSON -> Python object (dict/list), through the json module: one conversion path.
pybind11::object to_python(const nlohmann::json& value);

// A Python value as the knob registry's variant; a type no knob takes is a ConfigError naming
// the knob (register_engine.cpp).
vramplan::KnobValue knob_value(const std::string& name, const pybind11::handle& value);

// A dict of vLLM knob names as an EngineConfig through the registry (None: unset); the
// evaluated form refuses a knob that changes the compiled launch (register_engine.cpp).
vramplan::EngineConfig engine_config_from(const pybind11::dict& knobs);
vramplan::EngineConfig evaluated_config_from(const pybind11::dict& knobs);

}  // namespace vramplan_py
