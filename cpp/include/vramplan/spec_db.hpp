// The spec database: model YAML files and gpus.yaml, validated against the schema in
// spec_yaml.cpp (one key table, also printed by `vramplan schema`).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vramplan/hardware.hpp"
#include "vramplan/model_spec.hpp"

namespace vramplan {

// Parse one model spec from YAML text; `file` names the source in errors.
ModelSpec parse_model_spec_yaml(const std::string& yaml_text, const std::string& file);
// Read one model YAML file.
ModelSpec load_model_spec_file(const std::string& path);
// Parse a gpus.yaml document (a top-level `gpus:` list); each GPU is followed by its MIG
// slices. `first_index` numbers the list's items in errors (gpus[i]) where the text holds one
// item of a larger list.
std::vector<GpuSpec> parse_gpus_yaml(const std::string& yaml_text, const std::string& file,
                                     std::size_t first_index = 0);

// Validate cross-field rules and expand defaults (head_dim, per-layer geometry). Throws
// SpecError naming `spec.source`. Used by every source (YAML, config.json import).
void finalize_model_spec(ModelSpec& spec);

struct SchemaKey {
  const char*
      record;  // "model", "moe", "mla", "mamba", "linear_attention", "quantization", "gpu", ...
  const char* key;
  const char* type;  // "int", "bool", "string", "dtype", "list[string]", ...
  bool required;
  const char* doc;
  // "int" and "list[int]" keys: the largest value accepted. The bounds are chosen so that the
  // products the planner forms from bounded fields stay inside int64 (a KV token's bytes, one
  // sequence's state, a tensor's elements); sums over tensors are checked where they are added.
  std::int64_t max_value = 0;
};
// The schema table, for documentation and `vramplan schema`.
const std::vector<SchemaKey>& schema_keys();
// The schema rendered as a Markdown table per record.
std::string schema_markdown();

class SpecDatabase {
 public:
  // Index <dir>/models/**/*.yaml by the id and aliases each file's top-level lines name (a
  // file parses on first use: a plan reads one model, not all), and <dir>/gpus.yaml's GPUs by
  // the id, aliases and shared aliases their lines name (each GPU parses on first use, with its
  // MIG slices; a slice's name, or a listing, parses them all). Throws SpecError on a duplicate
  // name and a file it cannot read; a model's or a GPU's own errors come when it is first used
  // (a file whose names the scan cannot read for certain parses here).
  static SpecDatabase load_directory(const std::string& dir);

  // Find a model by id or alias (case-insensitive). Throws ConfigError listing near names.
  const ModelSpec& model(const std::string& name) const;
  bool has_model(const std::string& name) const;
  // The one GPU lookup every command uses: a database id, an alias, the name nvidia-smi /
  // rocm-smi print ("NVIDIA GeForce RTX 4090 D", "AMD Instinct MI300X") or an lspci line
  // ("NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"), compared without case, vendor and
  // brand words or '-'/'_' spacing. A shared name ("NVIDIA A100") gives the first GPU listing it;
  // gpu_name_note says which was assumed. Throws ConfigError listing near names.
  const GpuSpec& gpu(const std::string& name) const;
  bool has_gpu(const std::string& name) const;
  // Every GPU `name` may mean: one for an exact name, several for a shared one (first = assumed),
  // none for an unknown name.
  std::vector<GpuSpec> gpu_candidates(const std::string& name) const;
  // For a shared name, the warning that says which GPU was assumed and what the others are;
  // empty otherwise.
  std::string gpu_name_note(const std::string& name) const;

  std::vector<std::string> model_ids() const;
  std::vector<std::string> gpu_ids() const;
  // Every model, each file parsed (SpecError on the first bad one).
  std::vector<ModelSpec> models() const;
  // Every GPU, then its MIG slices, in gpus.yaml's order (SpecError on the first bad one).
  const std::vector<GpuSpec>& gpus() const;

  void add_model(ModelSpec spec);  // throws SpecError on a duplicate id/alias

 private:
  // One item of gpus.yaml's list: the text that parses it alone (its lines at their line
  // numbers) and the names its lines give, or a GPU added parsed; parsed once on first use.
  struct GpuEntry {
    std::string file;
    std::string text;
    std::size_t list_index = 0;
    std::vector<std::string> names;  // id first, then the aliases
    std::vector<std::string> shared_names;
    std::once_flag parse_once;
    std::vector<GpuSpec> specs;  // the GPU, then its MIG slices
  };
  // Every GPU and slice, indexed by all their names: built on the first listing or slice name.
  struct GpuCatalogue {
    std::vector<GpuSpec> gpus;
    std::map<std::string, std::size_t> index;                      // gpu_key -> gpus index
    std::map<std::string, std::vector<std::size_t>> shared_index;  // gpu_key -> indices
  };
  // A model: parsed (add_model, or a file the scan could not index), or a file's text with the
  // names its scan read, parsed once on first use and checked against those names.
  struct ModelEntry {
    std::string file;
    std::string text;
    std::vector<std::string> names;  // id first, then the aliases
    std::once_flag parse_once;
    std::optional<ModelSpec> spec;
  };
  std::vector<std::shared_ptr<ModelEntry>> models_;
  std::map<std::string, std::size_t> model_index_;  // lower-cased id/alias -> index
  std::vector<std::shared_ptr<GpuEntry>> gpu_entries_;
  std::map<std::string, std::size_t> gpu_index_;  // gpu_key of an entry's name -> entry
  std::map<std::string, std::vector<std::size_t>> shared_gpu_index_;  // gpu_key -> entries
  std::shared_ptr<std::once_flag> catalogue_once_ = std::make_shared<std::once_flag>();
  std::shared_ptr<GpuCatalogue> catalogue_ = std::make_shared<GpuCatalogue>();
  std::vector<const GpuSpec*> gpu_matches(const std::string& name) const;
  const GpuCatalogue& catalogue() const;
  void add_entry(std::shared_ptr<ModelEntry> entry, const std::string& source);
  void add_gpu_entry(std::shared_ptr<GpuEntry> entry);
  static const ModelSpec& parsed(ModelEntry& entry);
  static const std::vector<GpuSpec>& parsed(GpuEntry& entry);
};

}  // namespace vramplan
