#include "vramplan/spec_db.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string_view>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/text_scan.hpp"

namespace vramplan {
namespace {

std::string key_of(const std::string& name) {
  std::string out = name;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A GPU name as compared: lower case, '-'/'_' as spaces, single spaces, without the vendor and
// brand words that nvidia-smi, rocm-smi and lspci add or leave out ("NVIDIA GeForce RTX 4090"
// and "RTX-4090" are one key).
std::string gpu_key(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  bool space = false;
  for (const char raw : name) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(raw)));
    if (c == '-' || c == '_' || std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  static const char* const prefixes[] = {"nvidia corporation ",
                                         "advanced micro devices, inc. ",
                                         "nvidia ",
                                         "amd ",
                                         "geforce ",
                                         "tesla ",
                                         "radeon ",
                                         "instinct "};
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* prefix : prefixes) {
      const std::string p(prefix);
      if (out.size() > p.size() && out.compare(0, p.size(), p) == 0) {
        out.erase(0, p.size());
        stripped = true;
      }
    }
  }
  return out;
}

// The keys to try for a name: the whole name, then an lspci line's last bracketed device name
// ("... GH100 [H100 SXM5 80GB] (rev a1)" -> "H100 SXM5 80GB").
std::vector<std::string> gpu_lookup_keys(const std::string& name) {
  std::vector<std::string> keys{gpu_key(name)};
  const std::size_t close = name.rfind(']');
  const std::size_t open = close == std::string::npos ? close : name.rfind('[', close);
  if (open != std::string::npos) keys.push_back(gpu_key(name.substr(open + 1, close - open - 1)));
  return keys;
}

// Up to five known names sharing the longest prefix with `name` (compared without case),
// for "did you mean", each as its file writes it.
std::string nearest_names(const std::map<std::string, std::string>& names_by_key,
                          const std::string& name) {
  const std::string wanted = key_of(name);
  std::vector<std::pair<std::size_t, const std::string*>> scored;
  for (const auto& [key, written] : names_by_key) {
    const std::size_t common = text::common_prefix(key, wanted);
    const bool contains = key.find(wanted) != std::string::npos;
    scored.emplace_back(contains ? 1000 + common : common, &written);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (std::size_t i = 0; i < scored.size() && i < 5; ++i)
    out += (i ? ", " : "") + *scored[i].second;
  return out;
}

constexpr std::int64_t kMaxModelFileBytes = std::int64_t{1} << 20;  // as spec_yaml.cpp reads one

// One plain or quoted YAML scalar (a name), trimmed and without a trailing comment; nullopt
// for anything else (an escape, a flow collection, an anchor or alias, a tag, an empty value).
std::optional<std::string> scan_scalar(std::string_view text) {
  const std::string_view trimmed = text::trim(text);
  if (trimmed.empty()) return std::nullopt;
  const char quote = trimmed.front();
  if (quote == '"' || quote == '\'') {
    const std::size_t close = trimmed.find(quote, 1);
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    const std::string_view inner = trimmed.substr(1, close - 1);
    const std::string_view rest = text::trim(trimmed.substr(close + 1));
    if (inner.find('\\') != std::string_view::npos || (!rest.empty() && rest.front() != '#'))
      return std::nullopt;
    return std::string(inner);
  }
  std::string_view plain = trimmed;
  const std::size_t comment = plain.find(" #");
  if (comment != std::string_view::npos) plain = text::trim(plain.substr(0, comment));
  if (plain.empty() ||
      std::string_view("[]{}&*!|>%@`#-?:,").find(plain.front()) != std::string_view::npos ||
      plain.find(": ") != std::string_view::npos || plain.back() == ':')
    return std::nullopt;
  return std::string(plain);
}

// The items of a one-line flow list "[a, 'b', c]"; nullopt for anything else.
std::optional<std::vector<std::string>> scan_flow_list(std::string_view text) {
  std::string_view list = text::trim(text);
  const std::size_t comment = list.rfind(" #");
  if (comment != std::string_view::npos && list.find(']') < comment)
    list = text::trim(list.substr(0, comment));
  if (list.size() < 2 || list.front() != '[' || list.back() != ']') return std::nullopt;
  list = text::trim(list.substr(1, list.size() - 2));
  std::vector<std::string> items;
  if (list.empty()) return items;
  while (true) {
    // A quoted item may hold a comma: find its closing quote before the separator.
    std::size_t end = 0;
    if (list.front() == '"' || list.front() == '\'') {
      end = list.find(list.front(), 1);
      if (end == std::string_view::npos) return std::nullopt;
    }
    const std::size_t comma = list.find(',', end);
    const std::optional<std::string> item = scan_scalar(list.substr(0, comma));
    if (!item) return std::nullopt;
    items.push_back(*item);
    if (comma == std::string_view::npos) return items;
    list = text::trim(list.substr(comma + 1));
  }
}

// The id and aliases a model file's top-level lines name (id first), read without parsing
// the YAML; nullopt where a line is anything the scan cannot read for certain (the file is
// then parsed whole). The names are checked against the parse when the model is used.
std::optional<std::vector<std::string>> scan_model_names(const std::string& yaml_text) {
  std::optional<std::string> id;
  std::vector<std::string> aliases;
  bool aliases_seen = false;
  bool in_block_aliases = false;
  std::istringstream lines(yaml_text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view view(line);
    if (text::trim(view).empty() || text::trim(view).front() == '#') continue;
    if (view.front() == ' ' || view.front() == '-') {
      if (!in_block_aliases) continue;  // inside another key's block
      const std::string_view item = text::trim(view);
      if (item.size() < 2 || item.substr(0, 2) != "- ") return std::nullopt;
      const std::optional<std::string> name = scan_scalar(item.substr(2));
      if (!name) return std::nullopt;
      aliases.push_back(*name);
      continue;
    }
    in_block_aliases = false;
    if (view.front() == '\t' || view.substr(0, 3) == "---" || view.substr(0, 3) == "...")
      return std::nullopt;
    if (view.substr(0, 3) == "id:") {
      if (id) return std::nullopt;
      id = scan_scalar(view.substr(3));
      if (!id) return std::nullopt;
    } else if (view.substr(0, 8) == "aliases:") {
      if (aliases_seen) return std::nullopt;
      aliases_seen = true;
      const std::string_view rest = text::trim(view.substr(8));
      if (rest.empty() || rest.front() == '#') {
        in_block_aliases = true;
      } else {
        const std::optional<std::vector<std::string>> items = scan_flow_list(rest);
        if (!items) return std::nullopt;
        aliases = *items;
      }
    } else if (view.front() == '"' || view.front() == '\'' || view.front() == '?' ||
               view.front() == '{' || view.front() == '[' || view.front() == '&' ||
               view.front() == '*' || view.front() == '!' || view.front() == '<') {
      return std::nullopt;  // a key the scan cannot tell from id or aliases
    }
  }
  if (!id) return std::nullopt;
  aliases.insert(aliases.begin(), *id);
  return aliases;
}

// A parse that reads other names than the line scan that indexed the entry.
[[noreturn]] void names_differ(const std::string& file, const std::string& field,
                               const std::string& parsed_id, const std::string& scanned_id) {
  throw SpecError(file, field, "'" + parsed_id + "'",
                  "the id and aliases parsed differ from the ones the index read from the "
                  "file's lines (first: '" +
                      scanned_id + "'); write them as plain or quoted scalars");
}

// One item of gpus.yaml's list as its lines name it.
struct GpuItem {
  std::size_t begin = 0;  // offset of the item's first line
  std::size_t end = 0;
  std::int64_t first_line = 0;  // 1-based
  std::optional<std::string> id;
  std::vector<std::string> aliases;
  std::vector<std::string> shared_aliases;
};

// A key line of an item ("id: x", "aliases: [..]", ...); false where the scan cannot read it for
// certain. Keys other than the names are left to the parse.
bool scan_gpu_key(std::string_view line, GpuItem& item) {
  const auto list_after = [&line](std::size_t at, std::vector<std::string>& out) {
    const std::optional<std::vector<std::string>> items = scan_flow_list(line.substr(at));
    if (!items) return false;
    out = *items;
    return true;
  };
  if (line.substr(0, 3) == "id:") {
    if (item.id) return false;
    item.id = scan_scalar(line.substr(3));
    return item.id.has_value();
  }
  if (line.substr(0, 8) == "aliases:") return list_after(8, item.aliases);
  if (line.substr(0, 15) == "shared_aliases:") return list_after(15, item.shared_aliases);
  return std::string_view("\"'?{[&*!<-").find(line.front()) == std::string_view::npos;
}

// gpus.yaml's items and the names their lines give, read without parsing the YAML: a single
// top-level `gpus:` list whose items start at two spaces ("  - ") and whose keys sit at four.
// nullopt where a line is anything else (the file is then parsed whole); the names are checked
// against the parse when a GPU is used.
std::optional<std::vector<GpuItem>> scan_gpu_items(const std::string& text) {
  std::vector<GpuItem> items;
  bool list_open = false;
  std::int64_t line_number = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t next = text.find('\n', at);
    next = next == std::string::npos ? text.size() : next + 1;
    std::string_view line(text.data() + at, next - at);
    ++line_number;
    const std::size_t line_start = at;
    at = next;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    const std::string_view trimmed = text::trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    if (line.find('\t') != std::string_view::npos) return std::nullopt;
    if (!list_open) {
      if (line != "gpus:") return std::nullopt;
      list_open = true;
    } else if (line.substr(0, 4) == "  - ") {
      if (!items.empty()) items.back().end = line_start;
      items.push_back(GpuItem{line_start, text.size(), line_number, {}, {}, {}});
      if (!scan_gpu_key(line.substr(4), items.back())) return std::nullopt;
    } else {
      // Another top-level key, an item's line out of place, or a key the scan cannot read.
      const bool key_line = !items.empty() && line.substr(0, 4) == "    ";
      if (!key_line || (line[4] != ' ' && !scan_gpu_key(line.substr(4), items.back())))
        return std::nullopt;
    }
  }
  if (!list_open || items.empty()) return std::nullopt;
  for (const GpuItem& item : items) {
    if (!item.id) return std::nullopt;
  }
  return items;
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
  for (const auto& file : files) {
    auto entry = std::make_shared<ModelEntry>();
    entry->file = file.string();
    entry->text = read_regular_file(entry->file, "spec file", kMaxModelFileBytes);
    std::optional<std::vector<std::string>> names = scan_model_names(entry->text);
    if (!names) {
      db.add_model(parse_model_spec_yaml(entry->text, entry->file));
      continue;
    }
    entry->names = std::move(*names);
    db.add_entry(std::move(entry), file.string());
  }
  const fs::path gpus = root / "gpus.yaml";
  if (fs::exists(gpus)) {
    const std::string file = gpus.string();
    const std::string text = read_regular_file(file, "GPU database", std::int64_t{1} << 20);
    const std::optional<std::vector<GpuItem>> items = scan_gpu_items(text);
    if (!items) {
      for (auto& gpu : parse_gpus_yaml(text, file)) {
        auto entry = std::make_shared<GpuEntry>();
        entry->file = file;
        entry->names = gpu.aliases;
        entry->names.insert(entry->names.begin(), gpu.id);
        entry->shared_names = gpu.shared_aliases;
        entry->specs.push_back(std::move(gpu));
        std::call_once(entry->parse_once, [] {});
        db.add_gpu_entry(std::move(entry));
      }
      return db;
    }
    for (std::size_t i = 0; i < items->size(); ++i) {
      const GpuItem& item = (*items)[i];
      auto entry = std::make_shared<GpuEntry>();
      entry->file = file;
      entry->list_index = i;
      // The item alone, at its own line numbers: "gpus:" on line 1, blank lines up to it.
      entry->text = "gpus:\n" + std::string(static_cast<std::size_t>(item.first_line - 2), '\n') +
                    text.substr(item.begin, item.end - item.begin);
      entry->names = item.aliases;
      entry->names.insert(entry->names.begin(), *item.id);
      entry->shared_names = item.shared_aliases;
      db.add_gpu_entry(std::move(entry));
    }
  }
  return db;
}

void SpecDatabase::add_model(ModelSpec spec) {
  auto entry = std::make_shared<ModelEntry>();
  entry->names = spec.aliases;
  entry->names.insert(entry->names.begin(), spec.id);
  const std::string source = spec.source;
  entry->spec = std::move(spec);
  add_entry(std::move(entry), source);
}

void SpecDatabase::add_entry(std::shared_ptr<ModelEntry> entry, const std::string& source) {
  const std::size_t index = models_.size();
  for (const auto& name : entry->names) {
    const auto it = model_index_.find(key_of(name));
    if (it != model_index_.end()) {
      const ModelEntry& other = *models_[it->second];
      throw SpecError(source, name == entry->names.front() ? "id" : "aliases", "'" + name + "'",
                      "already defined by " + (other.spec ? other.spec->source : other.file));
    }
  }
  for (const auto& name : entry->names) model_index_[key_of(name)] = index;
  models_.push_back(std::move(entry));
}

const ModelSpec& SpecDatabase::parsed(ModelEntry& entry) {
  std::call_once(entry.parse_once, [&entry] {
    if (entry.spec) return;  // added parsed
    ModelSpec spec = parse_model_spec_yaml(entry.text, entry.file);
    std::vector<std::string> names = spec.aliases;
    names.insert(names.begin(), spec.id);
    if (names != entry.names) names_differ(entry.file, "id", spec.id, entry.names.front());
    entry.text.clear();
    entry.text.shrink_to_fit();
    entry.spec = std::move(spec);
  });
  return *entry.spec;
}

void SpecDatabase::add_gpu_entry(std::shared_ptr<GpuEntry> entry) {
  const std::size_t index = gpu_entries_.size();
  for (const auto& name : entry->names) {
    const std::string key = gpu_key(name);
    if (key.empty() || gpu_index_.count(key) != 0 || shared_gpu_index_.count(key) != 0) {
      throw SpecError("gpus.yaml", entry->names.front(), "'" + name + "'",
                      "GPU name empty or defined twice (names compare as '" + key + "')");
    }
  }
  for (const auto& name : entry->shared_names) {
    const std::string key = gpu_key(name);
    if (key.empty() || gpu_index_.count(key) != 0) {
      throw SpecError("gpus.yaml", entry->names.front(), "'" + name + "'",
                      "shared GPU name empty or also an exact name (compares as '" + key + "')");
    }
  }
  for (const auto& name : entry->names) gpu_index_[gpu_key(name)] = index;
  for (const auto& name : entry->shared_names) {
    auto& indices = shared_gpu_index_[gpu_key(name)];
    if (std::find(indices.begin(), indices.end(), index) == indices.end()) indices.push_back(index);
  }
  gpu_entries_.push_back(std::move(entry));
}

const std::vector<GpuSpec>& SpecDatabase::parsed(GpuEntry& entry) {
  std::call_once(entry.parse_once, [&entry] {
    std::vector<GpuSpec> specs = parse_gpus_yaml(entry.text, entry.file, entry.list_index);
    const GpuSpec& gpu = specs.front();
    std::vector<std::string> names = gpu.aliases;
    names.insert(names.begin(), gpu.id);
    if (names != entry.names || gpu.shared_aliases != entry.shared_names) {
      names_differ(entry.file, "gpus[" + std::to_string(entry.list_index) + "].id", gpu.id,
                   entry.names.front());
    }
    entry.text.clear();
    entry.text.shrink_to_fit();
    entry.specs = std::move(specs);
  });
  return entry.specs;
}

const SpecDatabase::GpuCatalogue& SpecDatabase::catalogue() const {
  std::call_once(*catalogue_once_, [this] {
    GpuCatalogue& all = *catalogue_;
    for (const auto& entry : gpu_entries_) {
      for (const GpuSpec& gpu : parsed(*entry)) all.gpus.push_back(gpu);
    }
    for (std::size_t index = 0; index < all.gpus.size(); ++index) {
      const GpuSpec& gpu = all.gpus[index];
      std::vector<std::string> names = gpu.aliases;
      names.insert(names.begin(), gpu.id);
      for (const auto& name : names) {
        const auto [at, added] = all.index.emplace(gpu_key(name), index);
        if (!added && at->second != index) {
          throw SpecError("gpus.yaml", gpu.id, "'" + name + "'",
                          "GPU name defined twice (names compare as '" + gpu_key(name) + "')");
        }
      }
      for (const auto& name : gpu.shared_aliases) {
        auto& indices = all.shared_index[gpu_key(name)];
        if (std::find(indices.begin(), indices.end(), index) == indices.end()) {
          indices.push_back(index);
        }
      }
    }
  });
  return *catalogue_;
}

const std::vector<GpuSpec>& SpecDatabase::gpus() const { return catalogue().gpus; }

// An exact name before a shared one. A GPU's own names are indexed from its lines; a MIG
// slice's names (every one holds "mig") come from its parent's profiles, so such a name
// looks through the whole catalogue.
std::vector<const GpuSpec*> SpecDatabase::gpu_matches(const std::string& name) const {
  const std::vector<std::string> keys = gpu_lookup_keys(name);
  const bool slice = std::any_of(keys.begin(), keys.end(), [](const std::string& key) {
    return key.find("mig") != std::string::npos;
  });
  if (slice) {
    const GpuCatalogue& all = catalogue();
    for (const auto& key : keys) {
      const auto it = all.index.find(key);
      if (it != all.index.end()) return {&all.gpus[it->second]};
    }
    for (const auto& key : keys) {
      const auto it = all.shared_index.find(key);
      if (it == all.shared_index.end()) continue;
      std::vector<const GpuSpec*> out;
      for (const std::size_t index : it->second) out.push_back(&all.gpus[index]);
      return out;
    }
    return {};
  }
  for (const auto& key : keys) {
    const auto it = gpu_index_.find(key);
    if (it != gpu_index_.end()) return {&parsed(*gpu_entries_[it->second]).front()};
  }
  for (const auto& key : keys) {
    const auto it = shared_gpu_index_.find(key);
    if (it == shared_gpu_index_.end()) continue;
    std::vector<const GpuSpec*> out;
    for (const std::size_t index : it->second) out.push_back(&parsed(*gpu_entries_[index]).front());
    return out;
  }
  return {};
}

std::vector<GpuSpec> SpecDatabase::gpu_candidates(const std::string& name) const {
  std::vector<GpuSpec> out;
  for (const GpuSpec* gpu : gpu_matches(name)) out.push_back(*gpu);
  return out;
}

std::string SpecDatabase::gpu_name_note(const std::string& name) const {
  const std::vector<const GpuSpec*> matches = gpu_matches(name);
  if (matches.size() < 2) return {};
  std::string others;
  for (std::size_t i = 1; i < matches.size(); ++i) others += (i > 1 ? ", " : "") + matches[i]->id;
  const GpuSpec& assumed = *matches.front();
  return "GPU '" + name + "' names several memory sizes; assumed " + assumed.id + " (" +
         assumed.name + ", total " + std::to_string(assumed.total_memory_bytes) +
         " bytes); give --gpu " + others + " if that is the one";
}

bool SpecDatabase::has_model(const std::string& name) const {
  return model_index_.count(key_of(name)) != 0;
}
bool SpecDatabase::has_gpu(const std::string& name) const { return !gpu_matches(name).empty(); }

const ModelSpec& SpecDatabase::model(const std::string& name) const {
  const auto it = model_index_.find(key_of(name));
  if (it == model_index_.end()) {
    std::map<std::string, std::string> known;
    for (const auto& entry : models_) {
      for (const auto& written : entry->names) known.emplace(key_of(written), written);
    }
    throw ConfigError("model", "'" + name + "'", nearest_names(known, name),
                      "unknown model (not an id or alias in model_specs/)");
  }
  return parsed(*models_[it->second]);
}

const GpuSpec& SpecDatabase::gpu(const std::string& name) const {
  const std::vector<const GpuSpec*> matches = gpu_matches(name);
  if (matches.empty()) {
    std::map<std::string, std::string> known;
    for (const auto& gpu : gpus()) {
      known.emplace(key_of(gpu.id), gpu.id);
      for (const auto& alias : gpu.aliases) known.emplace(key_of(alias), alias);
    }
    throw ConfigError("gpu", "'" + name + "'", nearest_names(known, name),
                      "unknown GPU (not in model_specs/gpus.yaml; see `vramplan gpus`)");
  }
  return *matches.front();
}

std::vector<std::string> SpecDatabase::model_ids() const {
  std::vector<std::string> out;
  for (const auto& entry : models_) out.push_back(entry->names.front());
  return out;
}

std::vector<ModelSpec> SpecDatabase::models() const {
  std::vector<ModelSpec> out;
  out.reserve(models_.size());
  for (const auto& entry : models_) out.push_back(parsed(*entry));
  return out;
}

std::vector<std::string> SpecDatabase::gpu_ids() const {
  std::vector<std::string> out;
  for (const auto& g : gpus()) out.push_back(g.id);
  return out;
}

}  // namespace vramplan
