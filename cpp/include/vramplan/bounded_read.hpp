// Every file the core reads is opened here: the type is checked before opening and again on
// the descriptor (directories, FIFOs, devices and sockets are refused by name; the open is
// non-blocking, so a FIFO swapped in cannot hang it), and the size is capped before reading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vramplan {

// A regular file open for reading. Errors are ParseErrors naming the file and `what`.
class RegularFile {
 public:
  // Refuses a file that is not regular or is larger than `max_bytes`.
  RegularFile(const std::string& path, const std::string& what, std::int64_t max_bytes);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  RegularFile(RegularFile&&) = delete;
  RegularFile& operator=(RegularFile&&) = delete;

  std::int64_t size() const noexcept { return size_bytes_; }
  // Up to `count` bytes at the current position; fewer only at the end of the file.
  std::size_t read(char* out, std::size_t count);
  // The rest of the file, refusing it if it grew past `max_bytes` since it was opened.
  std::string read_all();

 private:
  std::string path_;
  std::string what_;
  std::int64_t max_bytes_;
  std::int64_t size_bytes_ = 0;
  std::int64_t offset_ = 0;
  int fd_ = -1;
};

// The whole of a regular file of at most `max_bytes`.
std::string read_regular_file(const std::string& path, const std::string& what,
                              std::int64_t max_bytes);

}  // namespace vramplan
