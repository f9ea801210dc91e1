// The expected available-KV error of a launch: its (GPU family x era) row of the
// leave-one-source-out table that `benchmarks/validate.py --loso` writes to
// model_specs/error_bands.json (docs/accuracy.md explains the rule). The family is the GPU's
// gpus.yaml `family`; the era is that of the engines.yaml row the launch uses.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"

namespace vramplan {

struct ErrorBand {
  std::string group;  // the table's row: "H100/H200 x v1"
  std::int64_t held_out_records = 0;
  std::optional<std::int64_t> band_bytes;  // p90 absolute held-out error; none: no measured band
  // The largest held-out over-prediction of launches like this one: of the group's TP = 1
  // launches for a TP = 1 launch where three or more were held out (the TP > 1 ones carry the
  // interconnect's NCCL buffers, which vary between machines), else of the whole group.
  std::optional<std::int64_t> over_prediction_bytes;
  // The CUDA-graph pool's p90 absolute held-out error as a fraction of the logged pool, and
  // the held-out graph figures behind it; none below three (the pool model is one H100 fit).
  std::int64_t cudagraph_held_out_records = 0;
  std::optional<double> cudagraph_band_fraction;
  std::string statement;  // one sentence saying the above
};

// The era as the table names it: V0, v1-early, v1, v1-latest.
const char* error_band_era(EngineEra era) noexcept;

class ErrorBandTable {
 public:
  // Reads <path> (a bounded read, as the spec database reads its files). Throws SpecError
  // naming the file and the field.
  static ErrorBandTable load_file(const std::string& path);
  static ErrorBandTable parse(const std::string& json_text, const std::string& file);

  // The row of `gpu_family` (empty: "unknown") in `era`, for a launch of `tensor_parallel_size`;
  // a row the table lacks has no band.
  ErrorBand lookup(const std::string& gpu_family, EngineEra era,
                   std::int32_t tensor_parallel_size = 1) const;
  // The launch's row: its GPU's family, its engine row's era.
  ErrorBand lookup(const CompiledLaunch& launch) const;

 private:
  struct Row {
    std::int64_t held_out = 0;
    std::optional<std::int64_t> band_bytes;
    std::optional<std::int64_t> over_prediction_bytes;
    std::optional<std::int64_t> over_prediction_single_gpu_bytes;
    std::int64_t cudagraph_held_out = 0;
    std::optional<double> cudagraph_band_fraction;
  };
  std::map<std::string, Row> rows_;
};

// The solver's margin for a launch with this band: an over-prediction the cross-validation
// has seen that is larger than the default margin becomes the margin, so that it cannot
// undo a "fits"; else the default.
std::int64_t safety_margin_with_band(const ErrorBand& band, std::int64_t default_margin_bytes);

nlohmann::json to_json(const ErrorBand& band);

}  // namespace vramplan
