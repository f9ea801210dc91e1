// libFuzzer target for calibration profiles (vramplan calibrate --out PROFILE.yaml, or written
// by hand): text -> engine version, GPU, launches and the engine row with its overrides; and for
// calibration priors (vramplan calibrate --priors FILE): text -> the priors at a version. Any
// input must give a profile (priors) or a vramplan::Error (a yaml-cpp conversion escaping, an alias
// bomb walked, a sanitizer report or a timeout is a bug).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "vramplan/calibrate.hpp"
#include "vramplan/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const vramplan::CalibrationProfile profile =
        vramplan::parse_calibration_profile(text, "<fuzz>");
    if (profile.engine_version.empty()) std::abort();
  } catch (const vramplan::Error&) {
  }
  try {
    for (const vramplan::CalibrationPrior& prior :
         vramplan::parse_calibration_priors(text, "<fuzz>", "0.19.0")) {
      if (prior.name.empty() || prior.source.empty()) std::abort();
    }
  } catch (const vramplan::Error&) {
  }
  return 0;
}
