// Models the user points at on disk, read offline: a spec YAML, a config.json, a checkpoint
// folder (plain, or a Hugging Face cache entry models--ORG--NAME), or a GGUF file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/model_spec.hpp"

namespace vramplan {

// The snapshot folder a Hugging Face cache entry resolves to: `models--ORG--NAME/` gives
// snapshots/<refs/main>/ (or its only snapshot); a snapshot or plain folder is returned as is.
// Throws ConfigError naming the folder when it is ambiguous or empty.
std::string resolve_model_folder(const std::string& path);

struct LoadedModel {
  ModelSpec spec;
  std::string kind;                // "yaml", "config", "safetensors", "gguf"
  std::vector<std::string> files;  // the files read
  // Exact stored bytes of every tensor in the checkpoint files (0 when only a config was read).
  std::int64_t checkpoint_bytes = 0;
  // What the spec's formula gives for the same checkpoint (checkpoint_tensor_bytes, MTP
  // included): equal to checkpoint_bytes when the spec describes the files exactly.
  std::int64_t spec_checkpoint_bytes = 0;
};

// Read a model from `path` (see above). Fails closed: a folder without config.json, a config
// whose cache layout is unknown, or a malformed header is an Error naming the file.
LoadedModel load_model_path(const std::string& path);

}  // namespace vramplan
