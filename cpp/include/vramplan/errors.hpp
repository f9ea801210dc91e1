// Typed errors for everything a user can hand us wrong. what() reads like a compiler
// diagnostic: "<file>:<field>: <problem> (got <value>)", so a user can jump to it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "vramplan/utf8.hpp"

namespace vramplan {

// Base of every error vramplan throws for bad input. Python maps it to a ValueError subclass.
// Messages quote hostile input, so invalid UTF-8 in them becomes U+FFFD: what() always
// converts to a Python str and into JSON.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(utf8::replace_invalid(message)) {}
};

// A spec file (YAML model/GPU database entry, HF config.json) is wrong.
class SpecError : public Error {
 public:
  SpecError(const std::string& file, const std::string& field_path, const std::string& value,
            const std::string& problem);
  const std::string& file() const noexcept { return file_; }
  const std::string& field_path() const noexcept { return field_path_; }
  const std::string& value() const noexcept { return value_; }

 private:
  std::string file_;
  std::string field_path_;
  std::string value_;
};

// Bytes are malformed (safetensors/GGUF header, truncated file, log text).
class ParseError : public Error {
 public:
  ParseError(const std::string& file, std::int64_t offset, const std::string& problem);
  const std::string& file() const noexcept { return file_; }
  std::int64_t offset() const noexcept { return offset_; }

 private:
  std::string file_;
  std::int64_t offset_;
};

// The user's knobs are inconsistent or out of range.
class ConfigError : public Error {
 public:
  ConfigError(const std::string& field, const std::string& value, const std::string& allowed,
              const std::string& problem);
  const std::string& field() const noexcept { return field_; }
  const std::string& value() const noexcept { return value_; }
  const std::string& allowed() const noexcept { return allowed_; }

 private:
  std::string field_;
  std::string value_;
  std::string allowed_;
};

}  // namespace vramplan
