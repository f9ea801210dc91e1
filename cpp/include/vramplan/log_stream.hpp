// The one streaming-parser form every engine's startup-log reader takes: an engine's parser is
// StreamingLogParser<its figures>, its line reader (LogReader<its figures>) defined and the
// template instantiated in its own parser file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vramplan {

// How a startup log ended, the same fields for vLLM's and SGLang's figures (each engine's
// figures derive from it and name their outcomes).
struct LogEnding {
  // How the last launch ended (the engine's outcome names), "unknown" where the log says
  // nothing this parser knows.
  std::string outcome = "unknown";
  // The failing lines, without process prefix and log header, trimmed, de-duplicated, at most
  // 32 of them (each cut at 2000 bytes, on a character boundary).
  std::vector<std::string> error_lines;
  // The log was longer than the engine's byte cap: only its start was read.
  bool truncated = false;
  // Launches the log holds (a restart appended to the same file): every figure is the last
  // launch's, never a mix.
  std::int32_t launches = 1;
};

// An engine's line reader behind its StreamingLogParser, defined in the engine's parser file:
// it holds `lines` (a LogLines) and takes feed(chunk) and finish().
template <typename Figures>
struct LogReader;

// Incremental parser: feed() the log in chunks of any size (a line may span chunks), then call
// finish() once.
template <typename Figures>
class StreamingLogParser {
 public:
  StreamingLogParser();
  ~StreamingLogParser();
  StreamingLogParser(const StreamingLogParser&) = delete;
  StreamingLogParser& operator=(const StreamingLogParser&) = delete;
  StreamingLogParser(StreamingLogParser&&) = delete;
  StreamingLogParser& operator=(StreamingLogParser&&) = delete;

  void feed(std::string_view chunk);
  bool truncated() const noexcept;  // the engine's byte cap reached: further input is ignored
  Figures finish();

 private:
  std::unique_ptr<LogReader<Figures>> state_;
};

}  // namespace vramplan
