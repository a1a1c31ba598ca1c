#include "node/backends/registry.hpp"
#include "BackendTestSupport.hpp"

#include <gtest/gtest.h>

using namespace colmet;

TEST(RegistryTest, lists_the_job_backends_in_order)
{
    const auto &table = node::job_backends();
    ASSERT_EQ(table.size(), 4u);
    EXPECT_EQ(table[0].name, "cgroup_cpu");
    EXPECT_EQ(table[1].name, "cgroup_memory");
    EXPECT_EQ(table[2].name, "cgroup_io");
    EXPECT_EQ(table[3].name, "processes");
    for (const auto &f : table) {
        EXPECT_FALSE(f.description.empty()) << f.name;
        EXPECT_NE(f.make_for_job, nullptr) << f.name;
    }
}

TEST(RegistryTest, each_backend_is_named_as_in_the_table)
{
    test::FakeTree tree;
    tree.copy_fixture("backends/v2");
    tree.write("proc/.keep", "");
    auto ctx = test::context(test::v2_paths(tree.path("job")), tree.path("proc"));
    for (const auto &f : node::job_backends()) {
        auto b = f.make_for_job(ctx);
        ASSERT_TRUE(b) << f.name << ": " << b.error().message();
        EXPECT_EQ((*b)->name(), f.name);
        EXPECT_EQ((*b)->scope(), wire::Scope::job);
    }
}
