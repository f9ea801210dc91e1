// A startup log read from a file into an engine's streaming parser (internal to the core).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "vramplan/bounded_read.hpp"

namespace vramplan {

// Feeds the file at `path` to a fresh `Parser` in 1 MiB chunks and returns its figures. Any
// size: the parser stops reading at its own cap (`truncated()`); the file must be a regular
// file (RegularFile refuses FIFOs, devices and directories by name).
template <typename Parser>
auto read_log_file(const std::string& path) {
  RegularFile in(path, "log", std::numeric_limits<std::int64_t>::max());
  constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  std::string chunk(kChunkBytes, '\0');
  Parser parser;
  while (!parser.truncated()) {
    const std::size_t got = in.read(chunk.data(), chunk.size());
    parser.feed(std::string_view(chunk.data(), got));
    if (got < chunk.size()) break;  // end of file
  }
  return parser.finish();
}

}  // namespace vramplan
