// append_fixed2 / append_integer against printf itself: the digits a verdict quotes must be the
// ones "%.2f" and "%lld" print, ties and the values just beside them included.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "decimal_text.hpp"

namespace vramplan {
namespace {

std::string printf_fixed2(double value) {
  char text[400];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string fixed2(double value) {
  std::string out = "x";  // appends, keeping what is there
  append_fixed2(out, value);
  return out.substr(1);
}

TEST(DecimalText, HandPickedValuesPrintAsPrintfPrintsThem) {
  // 0.125 and 0.375 are exact binary ties (to even: 0.12, 0.38); 2.675, 1.005 and 0.015 are
  // stored just below theirs (2.67, 1.00, 0.01).
  for (const double v : {0.0,
                         -0.0,
                         0.125,
                         0.375,
                         0.625,
                         0.875,
                         2.675,
                         1.005,
                         0.015,
                         0.045,
                         0.5,
                         1.5,
                         2.5,
                         0.995,
                         0.9949999999999999,
                         99.995,
                         1234567.125,
                         0.98,
                         0.92,
                         3.69,
                         -0.001,
                         -0.005,
                         -2.675,
                         9999999999999.99,
                         1e13,
                         1e300,
                         -1e300,
                         4.9e-324,
                         0.004999999999999999}) {
    EXPECT_EQ(fixed2(v), printf_fixed2(v)) << v;
  }
  EXPECT_EQ(fixed2(0.125), "0.12");
  EXPECT_EQ(fixed2(0.375), "0.38");
  EXPECT_EQ(fixed2(-0.0), "-0.00");
}

TEST(DecimalText, NonFiniteValuesPrintAsToCharsPrintsThem) {
  EXPECT_EQ(fixed2(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(fixed2(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(fixed2(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(DecimalText, EveryExactTieAndItsNeighboursBelowAThousand) {
  // k / 8 are the exact binary ties of two decimals; their neighbours one ulp away are not.
  for (int k = 0; k < 8000; ++k) {
    const double tie = k / 8.0;
    for (const double v : {tie, std::nextafter(tie, 0.0), std::nextafter(tie, 2000.0)}) {
      ASSERT_EQ(fixed2(v), printf_fixed2(v)) << v;
      ASSERT_EQ(fixed2(-v), printf_fixed2(-v)) << -v;
    }
  }
}

TEST(DecimalText, RandomValuesAcrossMagnitudes) {
  std::mt19937_64 random(20261129);
  std::uniform_real_distribution<double> mantissa(0.0, 1.0);
  std::uniform_int_distribution<int> exponent(-12, 14);
  for (int i = 0; i < 200000; ++i) {
    const double v = mantissa(random) * std::pow(10.0, exponent(random));
    ASSERT_EQ(fixed2(v), printf_fixed2(v)) << v;
  }
  // Decimal-looking values (a utilization, a concurrency): n / 1000 and n / 10000.
  for (int n = 0; n < 100000; ++n) {
    ASSERT_EQ(fixed2(n / 1000.0), printf_fixed2(n / 1000.0)) << n;
    ASSERT_EQ(fixed2(n / 10000.0), printf_fixed2(n / 10000.0)) << n;
  }
}

TEST(DecimalText, IntegersPrintAsPrintfPrintsThem) {
  for (const std::int64_t v :
       {std::int64_t{0}, std::int64_t{-1}, std::int64_t{483408},
        std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()}) {
    char text[32];
    std::snprintf(text, sizeof text, "%" PRId64, v);
    std::string out;
    append_integer(out, v);
    EXPECT_EQ(out, text);
  }
}

// TextBuffer writes what the same pieces appended to a std::string write, whatever the lengths:
// pieces that overflow its stack buffer, pieces longer than the buffer and figures that need a
// spill (a fixed2 of 1e300 is 300 digits) come out whole and in order.
TEST(DecimalText, TextBufferWritesWhatAppendsWrite) {
  const std::string long_piece(700, 'p');
  for (const std::size_t prefix_length : {0, 1, 100, 490, 500, 511, 512, 513, 1200}) {
    const std::string prefix(prefix_length, 'a');
    TextBuffer buffer;
    buffer << prefix;
    buffer.integer(std::numeric_limits<std::int64_t>::min()) << ", ";
    buffer.fixed2(2.675) << " ";
    buffer.fixed2(1e300) << long_piece;
    buffer.integer(42) << ".";
    std::string expected = prefix;
    append_integer(expected, std::numeric_limits<std::int64_t>::min());
    expected += ", ";
    append_fixed2(expected, 2.675);
    expected += " ";
    append_fixed2(expected, 1e300);
    expected += long_piece;
    append_integer(expected, 42);
    expected += ".";
    const std::string written = std::move(buffer).str();
    EXPECT_EQ(written, expected) << prefix_length;
    EXPECT_EQ(written.substr(prefix_length, 22), "-9223372036854775808, ") << prefix_length;
    EXPECT_EQ(written.size(), prefix_length + 22 + 4 + 1 + printf_fixed2(1e300).size() + 700 + 3)
        << prefix_length;
  }
}

}  // namespace
}  // namespace vramplan
