#include "vramplan/bounded_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

const char* kind_of(mode_t mode) noexcept {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& path, std::int64_t offset, const std::string& what,
                         const std::string& problem) {
  throw ParseError(path, offset, "cannot read the " + what + " (" + problem + ")");
}

void check_regular(const struct stat& info, const std::string& path, const std::string& what,
                   std::int64_t max_bytes) {
  if (!S_ISREG(info.st_mode)) {
    refuse(path, 0, what, std::string("it is ") + kind_of(info.st_mode) + ", not a regular file");
  }
  if (info.st_size > max_bytes) {
    refuse(path, 0, what,
           std::to_string(info.st_size) + " bytes, over the " + std::to_string(max_bytes) +
               "-byte limit");
  }
}

}  // namespace

RegularFile::RegularFile(const std::string& path, const std::string& what, std::int64_t max_bytes)
    : path_(path), what_(what), max_bytes_(max_bytes) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) refuse(path, 0, what, std::strerror(errno));
  check_regular(info, path, what, max_bytes);
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) refuse(path, 0, what, std::strerror(errno));
  if (::fstat(fd_, &info) != 0) {
    const int err = errno;
    ::close(fd_);
    refuse(path, 0, what, std::strerror(err));
  }
  try {
    check_regular(info, path, what, max_bytes);  // the file opened is the file checked
  } catch (...) {
    ::close(fd_);
    throw;
  }
  size_bytes_ = static_cast<std::int64_t>(info.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t RegularFile::read(char* out, std::size_t count) {
  std::size_t done = 0;
  while (done < count) {
    const ssize_t got = ::read(fd_, out + done, count - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      refuse(path_, offset_, what_, std::string("read failed: ") + std::strerror(errno));
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
    offset_ += got;
  }
  return done;
}

std::string RegularFile::read_all() {
  // Sized by the file's size at open; a file that grew meanwhile is read on, to the cap.
  std::string text;
  std::size_t want = static_cast<std::size_t>(std::max<std::int64_t>(size_bytes_ - offset_, 0)) + 1;
  for (;;) {
    const std::size_t have = text.size();
    text.resize(have + want);
    const std::size_t got = read(text.data() + have, want);
    text.resize(have + got);
    if (offset_ > max_bytes_) {
      refuse(path_, offset_, what_, "grew past the " + std::to_string(max_bytes_) + "-byte limit");
    }
    if (got < want) return text;
    want = std::size_t{1} << 16;
  }
}

std::string read_regular_file(const std::string& path, const std::string& what,
                              std::int64_t max_bytes) {
  RegularFile file(path, what, max_bytes);
  return file.read_all();
}

}  // namespace vramplan
