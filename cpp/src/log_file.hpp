// A startup log read from a file into an engine's streaming parser (internal to the core).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "json_optional.hpp"
#include "vramplan/bounded_read.hpp"
#include "vramplan/log_stream.hpp"

namespace vramplan {

// A log fed in chunks, cut into lines at '\n' or '\r' and bounded: at most `max_bytes` are
// read in all (then truncated()), and a line longer than `max_line_bytes` is skipped whole.
// Each engine's streaming parser holds one and takes every line through `on_line`.
class LogLines {
 public:
  LogLines(std::int64_t max_bytes, std::size_t max_line_bytes) noexcept
      : max_bytes_(max_bytes), max_line_bytes_(max_line_bytes) {}

  bool truncated() const noexcept { return truncated_; }

  template <typename OnLine>
  void feed(std::string_view chunk, OnLine&& on_line) {
    if (truncated_) return;
    const auto room = static_cast<std::uint64_t>(max_bytes_ - bytes_fed_);
    if (chunk.size() > room) {
      chunk = chunk.substr(0, static_cast<std::size_t>(room));
      truncated_ = true;
    }
    bytes_fed_ += static_cast<std::int64_t>(chunk.size());
    std::size_t start = 0;
    while (start < chunk.size()) {
      std::size_t end = start;
      while (end < chunk.size() && chunk[end] != '\n' && chunk[end] != '\r') ++end;
      const std::string_view piece = chunk.substr(start, end - start);
      if (end == chunk.size()) {  // the line goes on in the next chunk
        carry(piece);
        break;
      }
      if (partial_.empty() && !overlong_) {
        // The common case: the whole line is in this chunk, passed without a copy.
        if (piece.size() <= max_line_bytes_) on_line(piece);
      } else {
        carry(piece);
        if (!overlong_) on_line(std::string_view(partial_));
        partial_.clear();
        overlong_ = false;
      }
      start = end + 1;
    }
  }

  // The last line, which has no line end.
  template <typename OnLine>
  void finish(OnLine&& on_line) {
    if (!overlong_) on_line(std::string_view(partial_));
    partial_.clear();
    overlong_ = false;
  }

 private:
  void carry(std::string_view piece) {
    if (overlong_) return;
    if (partial_.size() + piece.size() > max_line_bytes_) {
      overlong_ = true;
      std::string().swap(partial_);
      return;
    }
    partial_.append(piece);
  }

  std::int64_t max_bytes_;
  std::size_t max_line_bytes_;
  std::string partial_;    // the line begun in an earlier chunk, not yet ended
  bool overlong_ = false;  // that line is past max_line_bytes_: skipped to its end
  std::int64_t bytes_fed_ = 0;
  bool truncated_ = false;
};

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

// StreamingLogParser's members, the same for every engine (its LogReader does the reading).
template <typename Figures>
StreamingLogParser<Figures>::StreamingLogParser()
    : state_(std::make_unique<LogReader<Figures>>()) {}
template <typename Figures>
StreamingLogParser<Figures>::~StreamingLogParser() = default;
template <typename Figures>
void StreamingLogParser<Figures>::feed(std::string_view chunk) {
  state_->feed(chunk);
}
template <typename Figures>
bool StreamingLogParser<Figures>::truncated() const noexcept {
  return state_->lines.truncated();
}
template <typename Figures>
Figures StreamingLogParser<Figures>::finish() {
  return state_->finish();
}

// The figures of a whole log held in memory, through a fresh `Parser`.
template <typename Parser>
auto parse_log_text(std::string_view text) {
  Parser parser;
  parser.feed(text);
  return parser.finish();
}

// A startup log's ending into its figures JSON, the same keys for every engine that counts
// launches.
inline void put_log_ending(nlohmann::json& j, const LogEnding& f) {
  j["outcome"] = f.outcome;
  j["error_lines"] = f.error_lines;
  j["truncated"] = f.truncated;
  j["launches"] = f.launches;
}

}  // namespace vramplan
