#include "vramplan/errors.hpp"

#include "vramplan/utf8.hpp"

namespace vramplan {

// The parts are kept as valid UTF-8 too: Python reads them back as str attributes.
SpecError::SpecError(const std::string& file, const std::string& field_path,
                     const std::string& value, const std::string& problem)
    : Error(file + ":" + field_path + ": " + problem + " (got " + value + ")"),
      file_(utf8::replace_invalid(file)),
      field_path_(utf8::replace_invalid(field_path)),
      value_(utf8::replace_invalid(value)) {}

ParseError::ParseError(const std::string& file, std::int64_t offset, const std::string& problem)
    : Error(file + ":@" + std::to_string(offset) + ": " + problem),
      file_(utf8::replace_invalid(file)),
      offset_(offset) {}

ConfigError::ConfigError(const std::string& field, const std::string& value,
                         const std::string& allowed, const std::string& problem)
    : Error(field + ": " + problem + " (got " + value + "; allowed: " + allowed + ")"),
      field_(utf8::replace_invalid(field)),
      value_(utf8::replace_invalid(value)),
      allowed_(utf8::replace_invalid(allowed)) {}

}  // namespace vramplan
