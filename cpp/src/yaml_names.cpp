#include "vramplan/yaml_names.hpp"

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "yaml_load.hpp"

namespace vramplan {

namespace {

nlohmann::json names_json(const YAML::Node& node, const std::string& file,
                          const std::string& field) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      std::string path = field;
      if (!path.empty()) path += '.';
      path += key;
      out[key] = names_json(entry.second, file, path);
    }
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string path = field;
      path += '[';
      path += std::to_string(i);
      path += ']';
      out.push_back(names_json(node[i], file, path));
    }
    return out;
  }
  // A plain `~`, `null` or empty value would be None to a YAML reader that types scalars.
  const bool null_like =
      node.IsNull() || (node.Tag() == "?" && (node.Scalar() == "~" || node.Scalar() == "null"));
  if (null_like) throw SpecError(file, field, "null", "expected a name");
  return node.Scalar();
}

}  // namespace

nlohmann::json load_yaml_names_file(const std::string& path, const std::string& what,
                                    std::int64_t max_bytes) {
  return names_json(load_yaml_checked(read_regular_file(path, what, max_bytes), path), path, "");
}

}  // namespace vramplan
