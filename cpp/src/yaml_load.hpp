// YAML text in, a tree checked whole before any reader walks it (internal to the core).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace vramplan {

// Nodes a document may expand to, aliases counted each time they are reached: real specs and
// profiles are a few thousand; an alias bomb reaches any number.
constexpr std::int64_t kMaxYamlNodes = std::int64_t{1} << 17;
constexpr int kMaxYamlDepth = 64;

// Parses `text` and checks, in one walk bounded by kMaxYamlNodes and kMaxYamlDepth, that every
// key is a plain scalar, no map holds a key twice, and all text is valid UTF-8. SpecError
// naming `file` and the field otherwise (the line, for text YAML cannot parse).
YAML::Node load_yaml_checked(const std::string& text, const std::string& file);

// Text for yaml-cpp with less to scan, line numbers kept (an emptied line keeps its newline,
// so an error's line is still the file's). For the compiled-in tables, parsed at every start
// of _core or of the first import: yaml-cpp scans every character, comments included. Neither
// is for text with block scalars (`|`, `>`), where such a line would be text.
// `text` with each line that is only a comment emptied.
std::string without_comment_lines(std::string_view text);
// `text` with the lines of the top-level `key:` section emptied, or (only_section) every line
// but that section's.
std::string without_section(std::string_view text, std::string_view key);
std::string only_section(std::string_view text, std::string_view key);

// A field with a vocabulary, for every rule table's row reader (`Row`: text(key) and a
// [[noreturn]] fail(key, value, problem)): the field's text must be one of `choices`' names,
// else the row's error with `expected` listing them.
template <typename T, typename Row>
T choice(const Row& row, const char* key, std::initializer_list<std::pair<const char*, T>> choices,
         const char* expected) {
  const std::string value = row.text(key);
  for (const auto& [name, result] : choices) {
    if (value == name) return result;
  }
  row.fail(key, value, expected);
}

}  // namespace vramplan
