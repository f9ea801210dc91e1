// YAML text in, a tree checked whole before any reader walks it (internal to the core).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace vramplan {

// Nodes a document may expand to, aliases counted each time they are reached: real specs and
// profiles are a few thousand; an alias bomb reaches any number.
constexpr std::int64_t kMaxYamlNodes = std::int64_t{1} << 17;
constexpr int kMaxYamlDepth = 64;

// Parses `text` and checks, in one walk bounded by kMaxYamlNodes and kMaxYamlDepth, that every
// key is a plain scalar, no map holds a key twice, and all text is valid UTF-8. SpecError
// naming `file` and the field otherwise (the line, for text YAML cannot parse).
YAML::Node load_yaml_checked(const std::string& text, const std::string& file);

}  // namespace vramplan
