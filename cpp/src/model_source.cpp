#include "vramplan/model_source.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/gguf_import.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/tensor_headers.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {
namespace fs = std::filesystem;

namespace {

bool has_suffix(const std::string& text, const std::string& suffix) {
  if (text.size() < suffix.size()) return false;
  std::string tail = text.substr(text.size() - suffix.size());
  std::transform(tail.begin(), tail.end(), tail.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return tail == suffix;
}

std::string read_small_text(const fs::path& path) {
  std::string text = read_regular_file(path.string(), "ref", 4096);
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// The name `vllm serve` takes for this path: ORG/NAME for a Hugging Face cache entry (served
// offline from the cache), the folder itself for a plain checkpoint folder, and for a copied
// config "ORG__NAME.json" the repo id it was copied from.
std::string served_name(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  for (fs::path q = p; !q.empty() && q != q.root_path(); q = q.parent_path()) {
    const std::string name = q.filename().string();
    if (name.rfind("models--", 0) == 0) {
      std::string repo = name.substr(8);
      const std::size_t sep = repo.find("--");
      if (sep != std::string::npos) repo.replace(sep, 2, "/");
      return repo;
    }
  }
  if (has_suffix(path, ".json") && p.filename() != "config.json") {
    std::string stem = p.stem().string();
    const std::size_t sep = stem.find("__");
    if (sep != std::string::npos) stem.replace(sep, 2, "/");
    return stem;
  }
  return p.filename() == "config.json" ? p.parent_path().string() : p.string();
}

bool is_under(const fs::path& root, const fs::path& path) {
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  return !ec &&
         std::mismatch(root.begin(), root.end(), real.begin(), real.end()).first == root.end();
}

// A snapshot folder, refused when it or a file in it links outside its cache entry (a planted
// link would make the planner read files the cache does not hold; real snapshot files link to
// ../../blobs/, inside the entry).
std::string inside_entry(const fs::path& entry, const fs::path& folder) {
  std::error_code ec;
  const fs::path root = fs::canonical(entry, ec);
  bool inside = !ec && is_under(root, folder);
  std::size_t checked = 0;
  for (auto it = fs::directory_iterator(folder, ec);
       inside && !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (++checked > 100000) break;  // the loaders refuse folders that large on their own
    inside = is_under(root, it->path());
  }
  if (!inside) {
    throw ConfigError("model", folder.string(), "a snapshot inside its cache entry",
                      "the snapshot or a file in it links outside the cache entry");
  }
  return folder.string();
}

}  // namespace

std::string resolve_model_folder(const std::string& path) {
  std::error_code ec;
  const fs::path dir(path);
  if (!fs::is_directory(dir, ec)) {
    throw ConfigError("model", path, "a folder", "not a folder");
  }
  const fs::path snapshots = dir / "snapshots";
  if (!fs::is_directory(snapshots, ec)) return dir.string();
  // A cache entry: refs/main names the revision the hub client resolved last.
  const fs::path ref = dir / "refs" / "main";
  if (fs::is_regular_file(ref, ec)) {
    const std::string revision = read_small_text(ref);
    const bool safe_name = !revision.empty() && revision.size() <= 64 &&
                           revision.find('/') == std::string::npos && revision != "." &&
                           revision != "..";
    if (safe_name && fs::is_directory(snapshots / revision, ec)) {
      return inside_entry(dir, snapshots / revision);
    }
  }
  std::vector<std::string> revisions;
  for (const auto& entry : fs::directory_iterator(snapshots, ec)) {
    if (entry.is_directory(ec)) revisions.push_back(entry.path().filename().string());
    if (revisions.size() > 1000) break;
  }
  if (revisions.size() == 1) return inside_entry(dir, snapshots / revisions.front());
  std::sort(revisions.begin(), revisions.end());
  throw ConfigError("model", path, "a cache entry with refs/main or a single snapshot",
                    revisions.empty() ? "no snapshot downloaded"
                                      : std::to_string(revisions.size()) +
                                            " snapshots and no usable refs/main; pass one of "
                                            "snapshots/<revision>/ (first: " +
                                            revisions.front() + ")");
}

LoadedModel load_model_path(const std::string& path) {
  std::error_code ec;
  LoadedModel out;
  if (path.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ConfigError("model", "\"" + path + "\"", "a model path",
                      "empty; give a file or folder ('.' for the current directory)");
  }
  const fs::path p(path);
  if (!fs::exists(p, ec))
    throw ConfigError("model", path, "an existing path", "no such file or folder");
  if (fs::is_regular_file(p, ec)) {
    if (has_suffix(path, ".yaml") || has_suffix(path, ".yml")) {
      out.spec = load_model_spec_file(path);
      out.kind = "yaml";
    } else if (has_suffix(path, ".gguf")) {
      const GgufHeader header = read_gguf_header(path);
      out.spec = model_spec_from_gguf(header);
      out.kind = "gguf";
      out.checkpoint_bytes = header.tensor_bytes();
    } else if (has_suffix(path, ".json")) {
      out.spec = load_hf_config(path);
      out.kind = "config";
    } else {
      throw ConfigError("model", path, "a .yaml spec, a config.json, a .gguf file or a folder",
                        "unknown kind of model file");
    }
    out.files = {path};
  } else {
    const std::string dir = resolve_model_folder(path);
    if (!fs::is_regular_file(fs::path(dir) / "config.json", ec)) {
      // A folder holding one GGUF file (a llama.cpp download) plans from that file.
      std::vector<std::string> ggufs;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (has_suffix(entry.path().string(), ".gguf")) ggufs.push_back(entry.path().string());
        if (ggufs.size() > 1) break;
      }
      if (ggufs.size() == 1) return load_model_path(ggufs.front());
      throw ConfigError("model", dir, "a folder with config.json or a single .gguf file",
                        "no config.json in the folder");
    }
    out.spec = load_hf_config(dir);
    out.kind = "config";
    out.files = {(fs::path(dir) / "config.json").string()};
    bool any_safetensors = false;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (has_suffix(entry.path().string(), ".safetensors")) any_safetensors = true;
    }
    if (any_safetensors) {
      const CheckpointTensors tensors = read_safetensors_folder(dir);
      out.kind = "safetensors";
      out.checkpoint_bytes = tensors.total_bytes;
      out.files.insert(out.files.end(), tensors.files.begin(), tensors.files.end());
    }
  }
  out.spec.source = path;
  if (out.kind != "yaml") out.spec.id = served_name(path);
  if (out.checkpoint_bytes > 0) {
    out.spec_checkpoint_bytes = checkpoint_tensor_bytes(out.spec, true);
    out.spec.checkpoint_bytes = out.checkpoint_bytes;
  }
  return out;
}

}  // namespace vramplan
