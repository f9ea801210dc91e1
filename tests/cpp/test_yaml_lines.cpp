// The compiled-in tables are handed to yaml-cpp with comment lines and unneeded sections
// emptied: the text left must parse to the same tree, and a line keeps its number.
#include <gtest/gtest.h>

#include <string>

#include "yaml_load.hpp"

namespace {

const std::string kText =
    "# header comment\n"
    "rows:\n"
    "  - name: a  # trailing comment stays\n"
    "    # an indented comment line\n"
    "  - name: b\n"
    "\n"
    "registry:\n"
    "  # inside the registry\n"
    "  - x\n"
    "registry_extra:\n"
    "  - y\n"
    "tail: 1\n";

TEST(YamlLines, CommentLinesEmptiedLineNumbersKept) {
  EXPECT_EQ(vramplan::without_comment_lines(kText),
            "\n"
            "rows:\n"
            "  - name: a  # trailing comment stays\n"
            "\n"
            "  - name: b\n"
            "\n"
            "registry:\n"
            "\n"
            "  - x\n"
            "registry_extra:\n"
            "  - y\n"
            "tail: 1\n");
}

TEST(YamlLines, ASectionEmptiedOrKeptAlone) {
  // "registry_extra:" is another key that only starts with the name.
  EXPECT_EQ(vramplan::without_section(kText, "registry"),
            "# header comment\n"
            "rows:\n"
            "  - name: a  # trailing comment stays\n"
            "    # an indented comment line\n"
            "  - name: b\n"
            "\n"
            "\n\n\n"
            "registry_extra:\n"
            "  - y\n"
            "tail: 1\n");
  const std::string alone = vramplan::only_section(kText, "registry");
  EXPECT_EQ(alone, std::string(6, '\n') + "registry:\n  # inside the registry\n  - x\n\n\n\n");
  const YAML::Node root = YAML::Load(alone);
  ASSERT_TRUE(root["registry"].IsSequence());
  EXPECT_EQ(root["registry"][0].as<std::string>(), "x");
  EXPECT_FALSE(root["rows"]);
  // An error in a section kept alone names the line the whole file's parse names.
  const std::string broken = kText + "registry_bad: [\n";
  const auto error_line = [](const std::string& text) {
    try {
      YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return e.mark.line;
    }
    return -1;
  };
  EXPECT_GT(error_line(broken), 10);
  EXPECT_EQ(error_line(vramplan::only_section(broken, "registry_bad")), error_line(broken));
}

}  // namespace
