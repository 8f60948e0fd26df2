// The configuration reference: what the visitor records of each key, and how
// the page groups keys under the choice or env family their doc names.

#include "config/config_reference.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "config/experiment_config.h"

namespace rlswarm::config {
namespace {

struct ToySection {
  std::int64_t count = 3;
  std::optional<double> rate;
  std::string mode = "fast";
  std::vector<std::int64_t> sizes = {4, 8};
  std::string path;

  template <class V>
  void Visit(V& v) {
    v.Field("count", count, "how many", Bounds{1, 1e12});
    v.Field("rate", rate, "a rate; null = none", Bounds{0, 1});
    v.Choice("mode", mode, "fast: quick; slow: careful", {"fast", "slow"});
    v.Field("sizes", sizes, "slow: layer sizes", Bounds{1, 1 << 20});
    v.Field("path", path, "where");
  }
};

TEST(KeyDocCollectorTest, RecordsTypeDefaultBoundsChoicesAndDocOfEveryKey) {
  ToySection toy;
  KeyDocCollector collector;
  collector.Section("toy", toy);
  ASSERT_EQ(collector.sections(), std::vector<std::string>{"toy"});
  const std::vector<KeyDoc>& keys = collector.keys();
  ASSERT_EQ(keys.size(), 5u);
  EXPECT_EQ(keys[0].section, "toy");
  EXPECT_EQ(keys[0].key, "count");
  EXPECT_EQ(keys[0].type, "integer");
  EXPECT_EQ(keys[0].default_value, "3");
  EXPECT_EQ(keys[0].bounds.max, 1e12);
  EXPECT_EQ(keys[1].type, "number or null");
  EXPECT_EQ(keys[1].default_value, "null");
  EXPECT_EQ(keys[2].choices, (std::vector<std::string>{"fast", "slow"}));
  EXPECT_EQ(keys[2].doc, "fast: quick; slow: careful");
  EXPECT_EQ(keys[3].type, "list of integers");
  EXPECT_EQ(keys[3].default_value, "[4, 8]");
  EXPECT_EQ(keys[4].default_value, "\"\"");  // an empty string, as YAML needs it written
}

TEST(ConfigReferenceTest, ListsEveryKeyTheReaderKnows) {
  ExperimentConfig defaults;
  KeyDocCollector collector;
  defaults.Visit(collector);
  const std::string page = ConfigReferenceMarkdown();
  for (const std::string& section : collector.sections()) {
    EXPECT_NE(page.find("\n## " + section + "\n"), std::string::npos) << section;
  }
  for (const KeyDoc& key : collector.keys()) {
    EXPECT_NE(page.find("| `" + key.key + "` | " + key.type + " | `" + key.default_value + "` |"),
              std::string::npos)
        << key.section << "." << key.key;
  }
}

TEST(ConfigReferenceTest, GroupsKeysUnderTheChoiceOrEnvFamilyTheirDocNames) {
  const std::string page = ConfigReferenceMarkdown();
  // A choice of another section, its prefix dropped from the description.
  const auto td3 = page.find("### actor: only when `learner.algorithm` is `td3`");
  ASSERT_NE(td3, std::string::npos);
  EXPECT_NE(page.find("| `noise_alpha` |", td3), std::string::npos);
  EXPECT_EQ(page.find("td3: ape_x spread"), std::string::npos);
  // A choice of the same section.
  EXPECT_NE(page.find("### launch: only when `launch.mode` is `processes`"), std::string::npos);
  // An env family named by the registry.
  EXPECT_NE(page.find("### env: only for MinAtar envs"), std::string::npos);
  EXPECT_NE(page.find("### env: only for gymnasium envs"), std::string::npos);
  // A choice whose doc explains its own values ("dqn: ...; td3: ...") stays
  // in the table of the keys that always apply.
  const auto learner = page.find("\n## learner\n");
  const auto algorithm = page.find("| `algorithm` | string | `dqn` |");
  const auto first_group = page.find("\n### learner: ");
  ASSERT_NE(learner, std::string::npos);
  EXPECT_LT(learner, algorithm);
  EXPECT_LT(algorithm, first_group);
}

TEST(ConfigReferenceTest, EscapesWhatMarkdownTablesWouldMisread) {
  const std::string page = ConfigReferenceMarkdown();
  EXPECT_NE(page.find("new priority = \\|TD error\\| + this"), std::string::npos);
  EXPECT_NE(page.find("(&lt;dir&gt;/shard-&lt;i&gt;)"), std::string::npos);
  EXPECT_NE(page.find("authorized_clients/\\*.key"), std::string::npos);
}

TEST(ConfigReferenceTest, FormatsRoundLimitsAsPowersOfTen) {
  EXPECT_EQ(FormatConfigNumber(1e12), "1e12");
  EXPECT_EQ(FormatConfigNumber(-1e6), "-1e6");
  EXPECT_EQ(FormatConfigNumber(1 << 20), "1048576");
  EXPECT_EQ(FormatConfigNumber(0.005), "0.005");
  EXPECT_EQ(FormatConfigNumber(65535), "65535");
}

}  // namespace
}  // namespace rlswarm::config
