#include "vramplan/error_band.hpp"

#include <cstdio>

#include "json_optional.hpp"
#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {

namespace {

constexpr std::int64_t kMaxBandTableBytes = std::int64_t{1} << 20;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A byte count of a row: a non-negative integer, or none (null, absent: no measured band).
std::optional<std::int64_t> row_bytes(const nlohmann::json& row, const char* key,
                                      const std::string& file, const std::string& group) {
  const auto found = row.find(key);
  if (found == row.end() || found->is_null()) return std::nullopt;
  if (!found->is_number_integer() || found->get<std::int64_t>() < 0) {
    throw SpecError(file, "groups." + group + "." + key, found->dump(),
                    "expected a non-negative integer of bytes, or null");
  }
  return found->get<std::int64_t>();
}

// A non-negative integer count of a row; 0 when absent.
std::int64_t row_count(const nlohmann::json& row, const char* key, const std::string& file,
                       const std::string& group) {
  const auto found = row.find(key);
  if (found == row.end()) return 0;
  if (!found->is_number_integer() || found->get<std::int64_t>() < 0) {
    throw SpecError(file, "groups." + group + "." + key, found->dump(),
                    "expected a non-negative integer");
  }
  return found->get<std::int64_t>();
}

// A fraction of a row: a finite number in [0, 100], or none (null, absent).
std::optional<double> row_fraction(const nlohmann::json& row, const char* key,
                                   const std::string& file, const std::string& group) {
  const auto found = row.find(key);
  if (found == row.end() || found->is_null()) return std::nullopt;
  if (!found->is_number() || !(found->get<double>() >= 0.0 && found->get<double>() <= 100.0)) {
    throw SpecError(file, "groups." + group + "." + key, found->dump(),
                    "expected a fraction between 0 and 100, or null");
  }
  return found->get<double>();
}

}  // namespace

const char* error_band_era(EngineEra era) noexcept {
  switch (era) {
    case EngineEra::V0:
      return "V0";
    case EngineEra::V1Early:
      return "v1-early";
    case EngineEra::V1Mid:
      return "v1";
    case EngineEra::V1Latest:
      return "v1-latest";
  }
  return "unknown";
}

ErrorBandTable ErrorBandTable::load_file(const std::string& path) {
  return parse(read_regular_file(path, "error-band table", kMaxBandTableBytes), path);
}

ErrorBandTable ErrorBandTable::parse(const std::string& json_text, const std::string& file) {
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) {
    throw SpecError(file, "(document)", "the file", "cannot read the error-band table: not JSON");
  }
  const auto groups = doc.is_object() ? doc.find("groups") : doc.end();
  if (!doc.is_object() || groups == doc.end() || !groups->is_object()) {
    throw SpecError(file, "groups", doc.is_object() && groups != doc.end() ? groups->dump() : "",
                    "expected an object of 'family x era' rows");
  }
  ErrorBandTable table;
  for (const auto& [group, row] : groups->items()) {
    if (!row.is_object()) {
      throw SpecError(file, "groups." + group, row.dump(), "expected an object");
    }
    Row parsed;
    parsed.held_out = row_count(row, "held_out", file, group);
    parsed.band_bytes = row_bytes(row, "band_bytes", file, group);
    parsed.over_prediction_bytes = row_bytes(row, "over_prediction_bytes", file, group);
    parsed.over_prediction_single_gpu_bytes =
        row_bytes(row, "over_prediction_single_gpu_bytes", file, group);
    parsed.cudagraph_held_out = row_count(row, "cudagraph_held_out", file, group);
    parsed.cudagraph_band_fraction = row_fraction(row, "cudagraph_band_fraction", file, group);
    table.rows_[group] = parsed;
  }
  return table;
}

ErrorBand ErrorBandTable::lookup(const std::string& gpu_family, EngineEra era,
                                 std::int32_t tensor_parallel_size) const {
  ErrorBand band;
  band.group =
      (gpu_family.empty() ? std::string("unknown") : gpu_family) + " x " + error_band_era(era);
  const auto row = rows_.find(band.group);
  if (row != rows_.end()) {
    band.held_out_records = row->second.held_out;
    band.band_bytes = row->second.band_bytes;
    const auto& single = row->second.over_prediction_single_gpu_bytes;
    band.over_prediction_bytes =
        tensor_parallel_size == 1 && single ? single : row->second.over_prediction_bytes;
    band.cudagraph_held_out_records = row->second.cudagraph_held_out;
    band.cudagraph_band_fraction = row->second.cudagraph_band_fraction;
  }
  const std::string held = std::to_string(band.held_out_records);
  if (band.band_bytes) {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.2f", static_cast<double>(*band.band_bytes) / kGiB);
    band.statement = "available KV cache +/- " + std::string(gib) + " GiB per GPU, 90%";
    if (band.over_prediction_bytes && *band.over_prediction_bytes > *band.band_bytes) {
      // The unsafe direction has its own bound where the held-out over-predictions reach past
      // the two-sided 90% band: a user deciding whether a launch fits needs that one.
      char over[32];
      std::snprintf(over, sizeof over, "%.2f",
                    static_cast<double>(*band.over_prediction_bytes) / kGiB);
      band.statement += ", over-predicted by at most " + std::string(over) + " GiB";
    }
    band.statement += " (" + band.group + ", " + held + " held-out records, docs/accuracy.md)";
  } else {
    band.statement = "no measured band for " + band.group + ": " + held + " held-out record" +
                     (band.held_out_records == 1 ? "" : "s") + " (docs/accuracy.md)";
  }
  if (band.cudagraph_band_fraction) {
    // The pool's per-layer piece varies about tenfold between machines (docs/validation/
    // graph-and-non-torch.md): said beside the KV band, not folded into it.
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.0f", *band.cudagraph_band_fraction * 100.0);
    band.statement += "; CUDA-graph pool +/- " + std::string(pct) + "%, 90% (" +
                      std::to_string(band.cudagraph_held_out_records) + " held-out records)";
  }
  return band;
}

ErrorBand ErrorBandTable::lookup(const CompiledLaunch& launch) const {
  return lookup(launch.hardware().gpu.family, launch.profile().era,
                launch.config().tensor_parallel_size);
}

std::int64_t safety_margin_with_band(const ErrorBand& band, std::int64_t default_margin_bytes) {
  if (band.over_prediction_bytes && *band.over_prediction_bytes > default_margin_bytes) {
    return *band.over_prediction_bytes;
  }
  return default_margin_bytes;
}

nlohmann::json to_json(const ErrorBand& band) {
  nlohmann::json out = {{"group", band.group}, {"held_out_records", band.held_out_records}};
  out["band_bytes"] = optional_json(band.band_bytes);
  out["over_prediction_bytes"] = optional_json(band.over_prediction_bytes);
  out["cudagraph_held_out_records"] = band.cudagraph_held_out_records;
  out["cudagraph_band_fraction"] = optional_json(band.cudagraph_band_fraction);
  out["statement"] = band.statement;
  return out;
}

}  // namespace vramplan
