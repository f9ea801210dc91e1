// One reader of engine version strings: the spellings releases and logs use, their order, and
// a named error for text that is no version.
#include <gtest/gtest.h>

#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/version.hpp"

using vramplan::ConfigError;
using vramplan::Version;

TEST(Version, ReadsTheSpellingsReleasesUse) {
  // vLLM tags ("v0.11.0"), PyPI post releases ("0.4.6.post5"), release candidates
  // ("v0.9.1rc2"), a fourth number ("0.10.1.1") and a dev build ("0.6.4.post2.dev123+g1234").
  EXPECT_EQ(Version::parse("v0.11.0").text(), "0.11.0");
  EXPECT_EQ(Version::parse("0.4.6.post5").text(), "0.4.6");
  EXPECT_EQ(Version::parse("v0.9.1rc2").text(), "0.9.1");
  EXPECT_EQ(Version::parse("0.10.1.1").text(), "0.10.1");
  EXPECT_EQ(Version::parse("0.6.4.post2.dev123+g1234").text(), "0.6.4");
  EXPECT_EQ(Version::parse("0.33.0").minor, 33);
  // A missing patch is 0; letters before the first digit are skipped.
  EXPECT_EQ(Version::parse("0.9").text(), "0.9.0");
  EXPECT_EQ(Version::parse("vllm-0.6.4").text(), "0.6.4");
}

TEST(Version, FindsTheFirstVersionInFreeText) {
  // Benchmark records state versions in prose; line numbers before the version are skipped.
  EXPECT_EQ(Version::find("0.8.x, not printed (V0 lines)")->text(), "0.8.0");
  EXPECT_EQ(Version::find("not printed ('worker.py:267' lines, March 2025: a 0.8.3 build)")->text(),
            "0.8.3");
  EXPECT_EQ(Version::find(">=0.21.0 (the log's own message)")->text(), "0.21.0");
  EXPECT_FALSE(Version::find("not printed (V0 lines, Dec 2024)").has_value());
  // read() takes only the first run of digits.
  EXPECT_FALSE(Version::read("worker.py:267 then 0.8.3").has_value());
}

TEST(Version, OrdersByMajorThenMinorThenPatch) {
  // Numerically, not as text: 0.10.2 follows 0.9.1 and precedes 0.11.0.
  EXPECT_LT(Version::parse("0.9.1"), Version::parse("0.10.2"));
  EXPECT_LT(Version::parse("0.10.1"), Version::parse("0.10.2"));
  EXPECT_LT(Version::parse("0.10.2"), Version::parse("0.11.0"));
  EXPECT_LT(Version::parse("0.33.0"), Version::parse("1.0"));
  EXPECT_EQ(Version::parse("0.8.5.post1"), Version::parse("0.8.5"));
  EXPECT_GE(Version::parse("0.8.5"), Version::parse("0.8.5"));
  EXPECT_NE(Version::parse("0.8.5"), Version::parse("0.8.4"));
}

TEST(Version, TextThatIsNoVersionIsANamedError) {
  for (const char* bad : {"", "banana", "0", "0.", "1.x", "v", "latest", "1234567.0"}) {
    EXPECT_FALSE(Version::read(bad).has_value()) << bad;
    try {
      (void)Version::parse(bad, "engine_version");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "engine_version") << bad;
      EXPECT_EQ(e.value(), "'" + std::string(bad) + "'");
    }
  }
}
