#include "vramplan/spec_db.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

std::string key_of(const std::string& name) {
  std::string out = name;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Up to five known names sharing the longest prefix with `name`, for "did you mean".
std::string nearest_names(const std::map<std::string, std::size_t>& index,
                          const std::string& name) {
  const std::string wanted = key_of(name);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& [key, unused] : index) {
    std::size_t common = 0;
    while (common < key.size() && common < wanted.size() && key[common] == wanted[common]) ++common;
    const bool contains = key.find(wanted) != std::string::npos;
    scored.emplace_back(contains ? 1000 + common : common, key);
  }
  std::sort(scored.begin(), scored.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (std::size_t i = 0; i < scored.size() && i < 5; ++i)
    out += (i ? ", " : "") + scored[i].second;
  return out;
}

}  // namespace

SpecDatabase SpecDatabase::load_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  SpecDatabase db;
  const fs::path root(dir);
  if (!fs::is_directory(root)) throw SpecError(dir, "<dir>", "missing", "spec directory not found");
  std::vector<fs::path> files;
  const fs::path models = root / "models";
  if (fs::is_directory(models)) {
    for (const auto& entry : fs::recursive_directory_iterator(models)) {
      if (entry.is_regular_file() && entry.path().extension() == ".yaml")
        files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());  // deterministic order and error reporting
  for (const auto& file : files) db.add_model(load_model_spec_file(file.string()));
  const fs::path gpus = root / "gpus.yaml";
  if (fs::exists(gpus)) {
    const std::string text =
        read_regular_file(gpus.string(), "GPU database", std::int64_t{1} << 20);
    for (auto& gpu : parse_gpus_yaml(text, gpus.string())) db.add_gpu(std::move(gpu));
  }
  return db;
}

void SpecDatabase::add_model(ModelSpec spec) {
  const std::size_t index = models_.size();
  std::vector<std::string> names = spec.aliases;
  names.insert(names.begin(), spec.id);
  for (const auto& name : names) {
    const auto it = model_index_.find(key_of(name));
    if (it != model_index_.end()) {
      throw SpecError(spec.source, name == spec.id ? "id" : "aliases", "'" + name + "'",
                      "already defined by " + models_[it->second].source);
    }
  }
  for (const auto& name : names) model_index_[key_of(name)] = index;
  models_.push_back(std::move(spec));
}

void SpecDatabase::add_gpu(GpuSpec gpu) {
  const std::size_t index = gpus_.size();
  std::vector<std::string> names = gpu.aliases;
  names.insert(names.begin(), gpu.id);
  for (const auto& name : names) {
    if (gpu_index_.count(key_of(name)) != 0) {
      throw SpecError("gpus.yaml", gpu.id, "'" + name + "'", "GPU name defined twice");
    }
  }
  for (const auto& name : names) gpu_index_[key_of(name)] = index;
  gpus_.push_back(std::move(gpu));
}

bool SpecDatabase::has_model(const std::string& name) const {
  return model_index_.count(key_of(name)) != 0;
}
bool SpecDatabase::has_gpu(const std::string& name) const {
  return gpu_index_.count(key_of(name)) != 0;
}

const ModelSpec& SpecDatabase::model(const std::string& name) const {
  const auto it = model_index_.find(key_of(name));
  if (it == model_index_.end()) {
    throw ConfigError("model", "'" + name + "'", nearest_names(model_index_, name),
                      "unknown model (not an id or alias in model_specs/)");
  }
  return models_[it->second];
}

const GpuSpec& SpecDatabase::gpu(const std::string& name) const {
  const auto it = gpu_index_.find(key_of(name));
  if (it == gpu_index_.end()) {
    throw ConfigError("gpu", "'" + name + "'", nearest_names(gpu_index_, name),
                      "unknown GPU (not in model_specs/gpus.yaml)");
  }
  return gpus_[it->second];
}

std::vector<std::string> SpecDatabase::model_ids() const {
  std::vector<std::string> out;
  for (const auto& m : models_) out.push_back(m.id);
  return out;
}

std::vector<std::string> SpecDatabase::gpu_ids() const {
  std::vector<std::string> out;
  for (const auto& g : gpus_) out.push_back(g.id);
  return out;
}

}  // namespace vramplan
