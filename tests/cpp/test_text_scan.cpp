// The engine-neutral text scanner: values read after a phrase, sizes in binary units, line
// cleaning. Expected values are worked out by hand in each line's comment.
#include <gtest/gtest.h>

#include <string>

#include "vramplan/log_parser.hpp"
#include "vramplan/sglang_log_parser.hpp"
#include "vramplan/text_scan.hpp"

namespace text = vramplan::text;

TEST(TextScan, AfterTakesTheOffsetFromThePhrase) {
  const std::string line = "GPU KV cache size: 1,234,560 tokens";
  EXPECT_EQ(text::after(line, "GPU KV cache size:"), 18u);  // 18 characters of phrase
  EXPECT_EQ(text::after(line, "absent"), text::npos);
  EXPECT_EQ(text::count_after(line, "GPU KV cache size:"), 1234560);
  // The last ';' before " total capacity;" (index 17): the value starts right after it.
  const std::string old_torch = "(GPU 0; 79.15 GiB total capacity; 10.81 MiB free;";
  const std::size_t cap = old_torch.find(" total capacity;");
  EXPECT_EQ(text::after_last(old_torch, ";", cap), 7u);
  EXPECT_DOUBLE_EQ(text::read_size(old_torch, 7)->gib(), 79.15);
  EXPECT_EQ(text::after_last(old_torch, ";", 6), text::npos);
}

TEST(TextScan, NumbersAreWholeOrNone) {
  EXPECT_DOUBLE_EQ(text::read_number("  -2.14 GiB", 0)->value, -2.14);
  EXPECT_FALSE(text::read_number("1,23", 0));   // a comma not followed by three digits
  EXPECT_FALSE(text::read_number("1.2.3", 0));  // never 1.2
  EXPECT_FALSE(text::read_number("1e5", 0));    // no exponents
  EXPECT_FALSE(text::to_count(*text::read_number("2.5", 0)));
  EXPECT_FALSE(text::to_count(*text::read_number("-3", 0)));
  const auto before = text::read_number_before("(16.00 GiB KV cache", 6);
  ASSERT_TRUE(before);
  EXPECT_DOUBLE_EQ(before->value, 16.0);
}

TEST(TextScan, SizesInBinaryUnits) {
  EXPECT_DOUBLE_EQ(text::read_size("37760kB", 0)->bytes, 37760.0 * 1024);  // kernel's kB
  EXPECT_DOUBLE_EQ(text::read_size("786.00 MiB", 0)->gib(), 786.0 / 1024);
  EXPECT_DOUBLE_EQ(text::read_size("0 bytes", 0)->bytes, 0.0);
  EXPECT_DOUBLE_EQ(text::read_size("2 TiB", 0)->gib(), 2048.0);
  EXPECT_DOUBLE_EQ(text::read_size("1.5GB", 0)->gib(), 1.5);  // vLLM's old "GB" is GiB
  EXPECT_FALSE(text::read_size("12 tokens", 0));
}

TEST(TextScan, CleaningAndPrefixes) {
  std::string storage;
  EXPECT_EQ(text::clean_line("\x1b[1;36mINFO\x1b[0m x", storage), "INFO x");
  EXPECT_EQ(text::clean_line("^[[32mok^[[0m", storage), "ok");     // pasted caret form
  EXPECT_EQ(text::clean_line("a\xff", storage), "a\xef\xbf\xbd");  // U+FFFD
  EXPECT_EQ(text::printable("a\tb\x01"), "a b ");
  EXPECT_EQ(text::strip_process_prefix("(EngineCore pid=7) [rank0]: msg"), "msg");
  EXPECT_EQ(text::strip_process_prefix("(not a prefix) msg"), "(not a prefix) msg");
  EXPECT_EQ(text::strip_compose_timestamp("2026-04-19 11:40:35.639 | msg"), "msg");
  const std::string_view levels[] = {"INFO "};
  EXPECT_EQ(text::strip_level_header("INFO 04-22 00:04:02 [core.py:105] msg", levels), "msg");
  EXPECT_EQ(text::strip_level_header("DEBUG x] msg", levels), "DEBUG x] msg");
}

// An escape sequence inside a number is a control byte there, as a NUL is: the digits on its
// two sides never join into one number (476,016 read from "47 ESC 6,016" would be a silent
// wrong answer). A colour sequence around a number still goes.
TEST(TextScan, EscapeSequencesInsideANumberSplitIt) {
  std::string storage;
  // ESC 6 is a two-byte ESC form: both bytes go, and what is left of the number is split.
  EXPECT_EQ(text::clean_line("size: 47\x1b"
                             "6,016 tokens",
                             storage),
            "size: 47\x1a,016 tokens");
  EXPECT_EQ(text::clean_line("size: 47\x1b[0m6,016", storage),
            "size: 47\x1a"
            "6,016");
  EXPECT_EQ(text::clean_line("size: 476,\x1b[1m016", storage),
            "size: 476,\x1a"
            "016");
  EXPECT_EQ(text::clean_line("size: 47^[[0m6", storage),
            "size: 47\x1a"
            "6");  // caret form
  EXPECT_EQ(text::clean_line("\x1b[32m476,016\x1b[0m tokens", storage), "476,016 tokens");
  EXPECT_EQ(text::clean_line("47\x1b[0m tokens", storage), "47 tokens");
  const std::string phrase = "GPU KV cache size:";
  // Each piece of the number apart, so that no hex escape runs into the digits after it.
  for (const std::string& line :
       {phrase + " 47\x1b" + "6,016 tokens", phrase + " 47\x1b[0m" + "6,016 tokens",
        phrase + " 47\x1b[1;32m\x1b[0m" + "6,016", phrase + " 476\x1b[0m,016 tokens",
        phrase + " 47\x1b[0m.5 tokens"}) {
    EXPECT_FALSE(text::count_after(text::clean_line(line, storage), phrase)) << line;
  }
  // The number that ends before a unit: a control byte in front of it is not a boundary.
  const std::string split = std::string("(47") + '\0' + "6.00 GiB";
  EXPECT_FALSE(text::read_number_before(split, split.find(" GiB")));
}

TEST(TextScan, EscapeInsideALogNumberIsNotANumberInEitherLog) {
  for (const char* inside : {"\x1b", "\x1b[0m", "\x1b[32m\x1b[0m"}) {
    const std::string vllm = std::string("INFO GPU KV cache size: 47") + inside + "6,016 tokens\n";
    EXPECT_FALSE(vramplan::parse_vllm_log(vllm).kv_tokens) << vllm;
    const std::string sglang =
        std::string("[TP0] max_total_num_tokens=9") + inside + "00000, chunked_prefill_size=8192\n";
    EXPECT_FALSE(vramplan::parse_sglang_log(sglang).max_total_num_tokens) << sglang;
  }
  // Coloured around the numbers, as real coloured logs are: read.
  EXPECT_EQ(vramplan::parse_vllm_log("\x1b[32mINFO\x1b[0m GPU KV cache size: \x1b[1m476,016\x1b[0m "
                                     "tokens\n")
                .kv_tokens,
            476016);
  EXPECT_EQ(vramplan::parse_sglang_log("\x1b[32m[TP0] max_total_num_tokens=900000\x1b[0m, "
                                       "chunked_prefill_size=8192\n")
                .max_total_num_tokens,
            900000);
}
