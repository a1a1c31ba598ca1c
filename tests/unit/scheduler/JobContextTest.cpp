// The job context's keys, their checks, and what Slurm's prolog and step
// environments give (recorded from Slurm 22.05's prolog, see slurm_cluster.sh).
#include "scheduler/JobContext.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace colmet::sched;

namespace {

Getenv env_of(const std::map<std::string, std::string> &vars)
{
    return [&vars](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

}  // namespace

TEST(JobContextTest, keys_are_unique_snake_names_and_three_label)
{
    std::map<std::string_view, int> seen;
    for (const auto &k : context_keys()) {
        EXPECT_EQ(seen[k.key]++, 0) << k.key;
        for (char c : k.key)
            EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << k.key;
        EXPECT_FALSE(k.meaning.empty());
        EXPECT_EQ(find_context_key(k.key), &k);
    }
    EXPECT_EQ(context_label_keys(), "account, partition, queue");
    EXPECT_EQ(find_context_key("user"), nullptr);  // set by colmet-node itself
}

TEST(JobContextTest, items_are_checked_and_text_made_safe)
{
    auto ok = parse_context_item("job_name=  a\tb\nc  ");
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->first, "job_name");
    EXPECT_EQ(ok->second, "a b c");
    EXPECT_EQ(parse_context_item("time_limit_s=0600")->second, "600");
    EXPECT_EQ(parse_context_item("start_time=1765000000")->second, "1765000000");
    // UTF-8 is kept, and cut at a character boundary.
    std::string long_name(255, 'x');
    long_name += "\xc3\xa9\xc3\xa9";
    auto cut = parse_context_item("job_name=" + long_name);
    ASSERT_TRUE(cut.ok());
    EXPECT_EQ(cut->second.size(), 255U);

    for (const char *bad : {"job_name", "=x", "nonsense=1", "user=root", "job_name=", "job_name= \t ", "job_nodes=-1",
                            "job_nodes=1.5", "job_nodes=", "job_nodes=99999999999999999999", "start_time=yesterday",
                            "host_memory_mib=0x10", "JOB_NAME=x"}) {
        auto r = parse_context_item(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message().find("context"), std::string::npos) << r.error().message();
    }
    auto unknown = parse_context_item("colour=blue");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message().find("known: job_name, account"), std::string::npos);
}

TEST(JobContextTest, cpus_per_node_sums)
{
    EXPECT_EQ(sum_cpus_per_node("2"), 2U);
    EXPECT_EQ(sum_cpus_per_node("4(x2),2"), 10U);
    EXPECT_EQ(sum_cpus_per_node("72(x100)"), 7200U);
    for (const char *bad : {"", ",", "2,", "x", "4(x0)", "4(x2", "4(2)", "-1", "4(x2),", "99999999999"})
        EXPECT_FALSE(sum_cpus_per_node(bad).has_value()) << bad;
}

TEST(JobContextTest, slurm_prolog_environment)
{
    // What Slurm 22.05's slurmd gave a prolog of `sbatch -J probejob --time=7`
    // (accounting off: no account, no name, no limit), plus GPUs and an account.
    std::map<std::string, std::string> vars{{"SLURM_JOB_PARTITION", "debug"},
                                            {"SLURM_JOB_NUM_NODES", "1"},
                                            {"SLURM_JOB_CPUS_PER_NODE", "2"},
                                            {"SLURM_JOB_ID", "7116712"},
                                            {"SLURM_SCRIPT_CONTEXT", "prolog_slurmd"}};
    EXPECT_EQ(slurm_prolog_context(env_of(vars)),
              (Context{{"partition", "debug"}, {"job_nodes", "1"}, {"job_cpus", "2"}}));
    vars["SLURM_JOB_ACCOUNT"] = "physics";
    vars["SLURM_JOB_GPUS"] = "0,3";
    vars["SLURM_JOB_CPUS_PER_NODE"] = "4(x2)";
    vars["SLURM_JOB_NUM_NODES"] = "two";  // malformed: left out
    EXPECT_EQ(slurm_prolog_context(env_of(vars)),
              (Context{{"account", "physics"}, {"partition", "debug"}, {"job_cpus", "8"}, {"host_gpus", "2"}}));
    EXPECT_TRUE(slurm_prolog_context(env_of({})).empty());
}

TEST(JobContextTest, slurm_step_environment)
{
    std::map<std::string, std::string> vars{{"SLURM_JOB_NAME", "probe\njob"}, {"SLURM_JOB_ACCOUNT", ""}};
    EXPECT_EQ(slurm_step_context(env_of(vars), 2048),
              (Context{{"job_name", "probe job"}, {"host_memory_mib", "2048"}}));
    EXPECT_EQ(slurm_step_context(env_of(vars), 0), (Context{{"job_name", "probe job"}}));  // no memory limit
    // Memory not allocated (CR_Core): what the job asked for per node.
    vars["SLURM_MEM_PER_NODE"] = "100";
    EXPECT_EQ(slurm_step_context(env_of(vars), 0), (Context{{"job_name", "probe job"}, {"host_memory_mib", "100"}}));
    EXPECT_EQ(slurm_step_context(env_of(vars), 4096),
              (Context{{"job_name", "probe job"}, {"host_memory_mib", "4096"}}));
    vars.erase("SLURM_MEM_PER_NODE");
    // Slurm 23.02 and later: the start and end times give the time limit.
    vars["SLURM_JOB_START_TIME"] = "1765000000";
    vars["SLURM_JOB_END_TIME"] = "1765000420";
    EXPECT_EQ(slurm_step_context(env_of(vars), std::nullopt),
              (Context{{"job_name", "probe job"}, {"start_time", "1765000000"}, {"time_limit_s", "420"}}));
}
