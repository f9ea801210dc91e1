// The error band of a launch: the (GPU family x era) row of error_bands.json, the sentence that
// states it, and the margin it gives the solver.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "vramplan/error_band.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

// The shipped H100/H200 x v1 row (model_specs/error_bands.json) and two smaller ones.
const char* const kTable = R"({
  "groups": {
    "H100/H200 x v1": {"held_out": 38, "band_bytes": 1721377970, "over_prediction_bytes": 84748011},
    "A100 x v1-early": {"held_out": 1, "band_bytes": null, "over_prediction_bytes": null},
    "L40S/L4 x V0": {"held_out": 6, "band_bytes": 3000000000, "over_prediction_bytes": 2147483648}
  }
})";

TEST(ErrorBand, StatesTheRowOfTheFamilyAndEra) {
  const ErrorBandTable table = ErrorBandTable::parse(kTable, "bands.json");
  const ErrorBand band = table.lookup("H100/H200", EngineEra::V1Mid);
  EXPECT_EQ(band.group, "H100/H200 x v1");
  EXPECT_EQ(band.held_out_records, 38);
  EXPECT_EQ(band.band_bytes, 1721377970);
  EXPECT_EQ(band.over_prediction_bytes, 84748011);
  // 1,721,377,970 / 2^30 = 1.6031 GiB.
  EXPECT_EQ(band.statement,
            "available KV cache +/- 1.60 GiB per GPU, 90% (H100/H200 x v1, 38 held-out records, "
            "docs/accuracy.md)");
}

TEST(ErrorBand, ATpOneLaunchTakesTheTpOneOverPredictionWhereTheTableHasOne) {
  // The group's largest over-prediction came from TP > 1 launches (the interconnect's NCCL
  // buffers); its TP = 1 launches were over-predicted by at most 0.1 GiB.
  const ErrorBandTable table = ErrorBandTable::parse(R"({"groups": {
    "H100/H200 x v1": {"held_out": 43, "band_bytes": 965363173,
                       "over_prediction_bytes": 1000655098,
                       "over_prediction_single_gpu_bytes": 107374182},
    "A100 x v1": {"held_out": 5, "band_bytes": 227385258, "over_prediction_bytes": 227385258,
                  "over_prediction_single_gpu_bytes": null}}})",
                                                     "bands.json");
  const std::int64_t default_margin = std::int64_t{512} << 20;
  const ErrorBand tp1 = table.lookup("H100/H200", EngineEra::V1Mid, 1);
  EXPECT_EQ(tp1.over_prediction_bytes, 107374182);
  EXPECT_EQ(safety_margin_with_band(tp1, default_margin), default_margin);
  const ErrorBand tp2 = table.lookup("H100/H200", EngineEra::V1Mid, 2);
  EXPECT_EQ(tp2.over_prediction_bytes, 1000655098);
  EXPECT_EQ(safety_margin_with_band(tp2, default_margin), 1000655098);
  // The TP = 2 launch's over-predictions reach past the 90% band (1,000,655,098 B = 0.9319 GiB
  // against 965,363,173 B = 0.8991 GiB): the statement gives that bound too; the TP = 1
  // launch's (0.10 GiB) is inside its band and is not repeated.
  EXPECT_EQ(tp2.statement,
            "available KV cache +/- 0.90 GiB per GPU, 90%, over-predicted by at most 0.93 GiB "
            "(H100/H200 x v1, 43 held-out records, docs/accuracy.md)");
  EXPECT_EQ(tp1.statement,
            "available KV cache +/- 0.90 GiB per GPU, 90% (H100/H200 x v1, 43 held-out records, "
            "docs/accuracy.md)");
  // No TP = 1 figure of its own (fewer than three held out): the group's.
  EXPECT_EQ(table.lookup("A100", EngineEra::V1Mid, 1).over_prediction_bytes, 227385258);
  EXPECT_THROW(ErrorBandTable::parse(R"({"groups": {"A100 x v1": {
    "over_prediction_single_gpu_bytes": -1}}})",
                                     "bands.json"),
               SpecError);
}

TEST(ErrorBand, NoRowOrNoBandIsSaidSo) {
  const ErrorBandTable table = ErrorBandTable::parse(kTable, "bands.json");
  const ErrorBand one = table.lookup("A100", EngineEra::V1Early);
  EXPECT_FALSE(one.band_bytes.has_value());
  EXPECT_EQ(one.statement,
            "no measured band for A100 x v1-early: 1 held-out record "
            "(docs/accuracy.md)");
  const ErrorBand none = table.lookup("", EngineEra::V1Latest);  // a GPU with no family
  EXPECT_EQ(none.group, "unknown x v1-latest");
  EXPECT_EQ(none.held_out_records, 0);
  EXPECT_EQ(none.statement,
            "no measured band for unknown x v1-latest: 0 held-out records "
            "(docs/accuracy.md)");
}

TEST(ErrorBand, AnOverPredictionLargerThanTheDefaultMarginBecomesTheMargin) {
  const ErrorBandTable table = ErrorBandTable::parse(kTable, "bands.json");
  const std::int64_t default_margin = std::int64_t{512} << 20;
  // 84,748,011 B (0.08 GiB) is below 0.5 GiB: the default stays.
  EXPECT_EQ(safety_margin_with_band(table.lookup("H100/H200", EngineEra::V1Mid), default_margin),
            default_margin);
  EXPECT_EQ(safety_margin_with_band(table.lookup("L40S/L4", EngineEra::V0), default_margin),
            std::int64_t{2} << 30);
  EXPECT_EQ(safety_margin_with_band(table.lookup("A100", EngineEra::V1Early), default_margin),
            default_margin);
}

TEST(ErrorBand, ABrokenTableIsASpecErrorNamingFileAndField) {
  EXPECT_THROW(ErrorBandTable::parse("[1, 2", "bands.json"), SpecError);
  EXPECT_THROW(ErrorBandTable::parse(R"({"rows": {}})", "bands.json"), SpecError);
  try {
    ErrorBandTable::parse(R"({"groups": {"A100 x v1": {"band_bytes": -1}}})", "bands.json");
    FAIL() << "a negative band was accepted";
  } catch (const SpecError& err) {
    EXPECT_EQ(err.file(), "bands.json");
    EXPECT_EQ(err.field_path(), "groups.A100 x v1.band_bytes");
  }
}

// The CUDA-graph pool's band is said beside the KV band (not folded into it): 1.26 of the
// logged pool is "+/- 126%", from 38 held-out graph figures.
TEST(ErrorBand, TheGraphPoolBandIsStatedBesideTheKvBand) {
  const ErrorBandTable table = ErrorBandTable::parse(
      R"({"groups": {"H100/H200 x v1": {"held_out": 39, "band_bytes": 1624720948,
          "over_prediction_bytes": 84748011, "cudagraph_held_out": 38,
          "cudagraph_band_fraction": 1.26},
        "A100 x v1": {"held_out": 3, "band_bytes": 269902113, "over_prediction_bytes": 269902113,
          "cudagraph_held_out": 2, "cudagraph_band_fraction": null}}})",
      "bands.json");
  const ErrorBand band = table.lookup("H100/H200", EngineEra::V1Mid);
  EXPECT_EQ(band.cudagraph_held_out_records, 38);
  EXPECT_EQ(band.cudagraph_band_fraction, 1.26);
  // 1,624,720,948 / 2^30 = 1.5131 GiB.
  EXPECT_EQ(band.statement,
            "available KV cache +/- 1.51 GiB per GPU, 90% (H100/H200 x v1, 39 held-out records, "
            "docs/accuracy.md); CUDA-graph pool +/- 126%, 90% (38 held-out records)");
  const ErrorBand few = table.lookup("A100", EngineEra::V1Mid);  // 2 graph figures: none said
  EXPECT_FALSE(few.cudagraph_band_fraction.has_value());
  EXPECT_EQ(few.statement.find("CUDA-graph"), std::string::npos);
  for (const char* bad : {R"({"groups": {"x": {"cudagraph_band_fraction": -0.5}}})",
                          R"({"groups": {"x": {"cudagraph_band_fraction": "wide"}}})",
                          R"({"groups": {"x": {"cudagraph_held_out": 1.5}}})"}) {
    EXPECT_THROW(ErrorBandTable::parse(bad, "bands.json"), SpecError) << bad;
  }
}

TEST(ErrorBand, EraNamesAreTheTables) {
  EXPECT_STREQ(error_band_era(EngineEra::V0), "V0");
  EXPECT_STREQ(error_band_era(EngineEra::V1Early), "v1-early");
  EXPECT_STREQ(error_band_era(EngineEra::V1Mid), "v1");
  EXPECT_STREQ(error_band_era(EngineEra::V1Latest), "v1-latest");
}

}  // namespace
}  // namespace vramplan
