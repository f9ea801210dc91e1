// libFuzzer target for Hugging Face cache layouts: the input lays out one cache entry on disk
// (refs/main, a snapshot folder or a link in its place, config.json or a link to one, a
// stray file) and the planner loads the entry as `vramplan plan PATH` does. Any layout must
// give a spec or a vramplan::Error, and a spec only from inside the entry: a snapshot or
// config.json reached through a link outside the cache is an escape (abort).
//
// Input: fields separated by NUL bytes: refs/main text, the snapshot's name, config.json text,
// then one byte of layout choices (bit 0: the snapshot is a link to a folder outside the entry;
// bit 1: config.json is a link outside; bit 2: refs/main is a FIFO; bit 3: a second snapshot).
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/model_source.hpp"

namespace {

namespace fs = std::filesystem;

std::vector<std::string> fields(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> out(1);
  for (std::size_t i = 0; i < size && out.size() <= 4; ++i) {
    if (data[i] == 0) {
      out.emplace_back();
    } else {
      out.back().push_back(static_cast<char>(data[i]));
    }
  }
  out.resize(4);
  return out;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A snapshot name the layout can create: one path component, not "." or "..".
bool plain_name(const std::string& name) {
  return !name.empty() && name.size() < 128 && name != "." && name != ".." &&
         name.find('/') == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto f = fields(data, size);
  const std::uint8_t layout = f[3].empty() ? 0 : static_cast<std::uint8_t>(f[3][0]);
  static const fs::path root =
      fs::temp_directory_path() / ("vramplan_fuzz_hf_cache_" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(root, ec);
  const fs::path entry = root / "hub" / "models--acme--m";
  const fs::path outside = root / "outside";
  fs::create_directories(entry / "refs", ec);
  fs::create_directories(entry / "snapshots", ec);
  fs::create_directories(outside, ec);
  write(outside / "config.json", f[2]);
  const std::string name = plain_name(f[1]) ? f[1] : "abc";
  const fs::path snapshot = entry / "snapshots" / name;
  const bool linked_snapshot = (layout & 1) != 0;
  const bool linked_config = (layout & 2) != 0;
  if (linked_snapshot) {
    fs::create_directory_symlink(outside, snapshot, ec);
  } else {
    fs::create_directories(snapshot, ec);
    if (linked_config) {
      fs::create_symlink(outside / "config.json", snapshot / "config.json", ec);
    } else {
      write(snapshot / "config.json", f[2]);
    }
  }
  if ((layout & 4) != 0) {
    ::mkfifo((entry / "refs" / "main").c_str(), 0600);
  } else {
    write(entry / "refs" / "main", f[0]);
  }
  if ((layout & 8) != 0) fs::create_directories(entry / "snapshots" / "other", ec);
  try {
    const vramplan::LoadedModel model = vramplan::load_model_path(entry.string());
    const fs::path inside = fs::canonical(entry);
    for (const std::string& file : model.files) {
      const fs::path real = fs::canonical(file, ec);
      const std::string text = real.string();
      if (ec || text.compare(0, inside.string().size(), inside.string()) != 0) std::abort();
    }
  } catch (const vramplan::Error&) {
  }
  return 0;
}
