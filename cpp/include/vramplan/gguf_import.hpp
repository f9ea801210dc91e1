// A llama.cpp GGUF file -> ModelSpec, from its architecture metadata and tensor table, so a
// GGUF checkpoint can be planned like any other. The spec is built in the schema of
// model_specs/ and read by the same parser; its checkpoint bytes are the file's exact tensor
// bytes. Fails closed: an unknown architecture or a missing key is a SpecError naming the key.
#pragma once

#include "vramplan/model_spec.hpp"
#include "vramplan/tensor_headers.hpp"

namespace vramplan {

ModelSpec model_spec_from_gguf(const GgufHeader& header);

}  // namespace vramplan
