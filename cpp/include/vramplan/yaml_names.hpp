// Data files whose every value is a name (model_specs/engine_args.yaml: vLLM's argument names
// per release), read as the spec database reads its files: a bounded read, a YAML tree checked
// whole (node and depth limits, no duplicate keys, valid UTF-8).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace vramplan {

// The document as JSON: maps as objects, sequences as arrays, every scalar as its text (no
// numbers, booleans or nulls: a file of names needs none). SpecError naming the file and the
// field for a null or a tag.
nlohmann::json load_yaml_names_file(const std::string& path, const std::string& what,
                                    std::int64_t max_bytes);

}  // namespace vramplan
