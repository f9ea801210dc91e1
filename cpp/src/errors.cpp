#include "vramplan/errors.hpp"

#include <utility>

namespace vramplan {

SpecError::SpecError(std::string file, std::string field_path, std::string value,
                     const std::string& problem)
    : Error(file + ":" + field_path + ": " + problem + " (got " + value + ")"),
      file_(std::move(file)),
      field_path_(std::move(field_path)),
      value_(std::move(value)) {}

ParseError::ParseError(std::string file, std::int64_t offset, const std::string& problem)
    : Error(file + ":@" + std::to_string(offset) + ": " + problem),
      file_(std::move(file)),
      offset_(offset) {}

ConfigError::ConfigError(std::string field, std::string value, std::string allowed,
                         const std::string& problem)
    : Error(field + ": " + problem + " (got " + value + "; allowed: " + allowed + ")"),
      field_(std::move(field)),
      value_(std::move(value)),
      allowed_(std::move(allowed)) {}

}  // namespace vramplan
