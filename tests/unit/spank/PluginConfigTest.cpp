#include "PluginConfig.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

using colmet::spank::Mode;
using colmet::spank::parse_config;

namespace {

colmet::Result<colmet::spank::PluginConfig> parse(std::vector<std::string_view> args)
{
    return parse_config(args, "/usr/sbin/colmet-job");
}

}  // namespace

TEST(PluginConfigTest, defaults_without_arguments)
{
    auto c = parse({});
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->collector, "");
    EXPECT_EQ(c->metrics, "");
    EXPECT_FALSE(c->period.has_value());
    EXPECT_EQ(c->cgroup_root, "/sys/fs/cgroup");
    EXPECT_EQ(c->mode, Mode::opt_in);
    EXPECT_EQ(c->run_dir, "/run/colmet");
    EXPECT_EQ(c->colmet_job, "/usr/sbin/colmet-job");
    EXPECT_TRUE(c->steps);
}

TEST(PluginConfigTest, reads_every_key)
{
    auto c = parse({"collector=tcp://10.0.0.1:5556", "metrics=perfhw:task_clock,page_faults", "period=0.5",
                    "cgroup_root=/cg", "mode=all", "run_dir=/tmp/run", "colmet_job=/opt/colmet-job",
                    "log_file=/var/log/colmet.log", "spool_dir=/var/spool/x", "steps=no", "timeout=5",
                    "summary_dir=/shared/colmet", "summary_wait=2.5"});
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->collector, "tcp://10.0.0.1:5556");
    EXPECT_EQ(c->metrics, "perfhw:task_clock,page_faults");
    EXPECT_DOUBLE_EQ(*c->period, 0.5);
    EXPECT_EQ(c->cgroup_root, "/cg");
    EXPECT_EQ(c->mode, Mode::all);
    EXPECT_EQ(c->run_dir, "/tmp/run");
    EXPECT_EQ(c->colmet_job, "/opt/colmet-job");
    EXPECT_EQ(c->log_file, "/var/log/colmet.log");
    EXPECT_EQ(c->spool_dir, "/var/spool/x");
    EXPECT_FALSE(c->steps);
    EXPECT_DOUBLE_EQ(c->timeout, 5);
    EXPECT_EQ(c->summary_dir, "/shared/colmet");
    EXPECT_DOUBLE_EQ(c->summary_wait, 2.5);
}

TEST(PluginConfigTest, rejects_unknown_key_and_names_the_known_ones)
{
    auto c = parse({"collector=tcp://h:1", "colector=tcp://h:1"});
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("unknown plugstack.conf argument 'colector'"), std::string::npos)
        << c.error().message();
    EXPECT_NE(c.error().message().find("collector, metrics, period"), std::string::npos);
}

TEST(PluginConfigTest, rejects_bad_values)
{
    struct Case {
        std::string_view arg;
        std::string_view expect;
    };
    for (const Case &k :
         {Case{"period=0.01", "between 0.1 and 3600"}, Case{"period=abc", "between 0.1 and 3600"},
          Case{"mode=sometimes", "opt-in or all"}, Case{"collector=localhost", "ZeroMQ endpoint"},
          Case{"collector=tcp://a:1,,tcp://b:1", "empty address"}, Case{"cgroup_root=relative/dir", "absolute path"},
          Case{"spool_dir=spool", "absolute path"}, Case{"steps=maybe", "yes or no"},
          Case{"metrics=perfhw,bogus", "unknown spec item 'bogus'"}, Case{"timeout=0", "1 and 60"},
          Case{"summary_dir=h5", "absolute path"}, Case{"summary_wait=61", "between 0 and 60"},
          Case{"summary_wait=-1", "between 0 and 60"}, Case{"novalue", "not key=value"}, Case{"=x", "not key=value"}}) {
        auto c = parse({k.arg});
        ASSERT_FALSE(c.ok()) << k.arg;
        EXPECT_NE(c.error().message().find(k.expect), std::string::npos) << k.arg << ": " << c.error().message();
    }
}

TEST(PluginConfigTest, rejects_a_key_given_twice)
{
    auto c = parse({"period=1", "period=2"});
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("given twice"), std::string::npos);
}

TEST(PluginConfigTest, argv_form_skips_nothing)
{
    char a0[] = "period=2";
    char a1[] = "mode=all";
    char *argv[] = {a0, a1, nullptr};
    auto c = parse_config(2, argv, "/x", "/y");
    EXPECT_EQ(c->colmet_ctl, "/y");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->mode, Mode::all);
    EXPECT_FALSE(parse_config(0, nullptr, "/x", "/y").value().period.has_value());
}

// Every plugstack.conf key is documented in spank-colmet(8) and in the README.
TEST(PluginConfigTest, man_page_and_readme_document_every_key)
{
    for (const char *doc : {"/man/spank-colmet.8", "/hooks/slurm/README.md"}) {
        std::ifstream in(std::string(COLMET_SOURCE_DIR) + doc);
        ASSERT_TRUE(in.good()) << doc;
        std::stringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        for (const auto &k : colmet::spank::config_keys())
            EXPECT_NE(text.find(std::string(k.name) + "="), std::string::npos)
                << doc << " does not document " << k.name << "=";
    }
}
