// The backend catalog's rows are consistent: every name, flag and spec word
// is given once, and each kind has the fields its consumers rely on.
#include "spec/backend_catalog.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace colmet::spec;

TEST(BackendCatalog, NamesFlagsAndKeywordsAreUnique)
{
    std::set<std::string_view> names, flags, keywords;
    for (const auto &b : k_backend_catalog) {
        EXPECT_TRUE(names.insert(b.name).second) << b.name;
        if (!b.flag.empty()) {
            EXPECT_TRUE(flags.insert(b.flag).second) << b.flag;
        }
        if (!b.spec_keyword.empty()) {
            EXPECT_TRUE(keywords.insert(b.spec_keyword).second) << b.spec_keyword;
        }
        EXPECT_FALSE(b.description.empty()) << b.name;
    }
}

TEST(BackendCatalog, EachKindHasWhatItsConsumersNeed)
{
    for (const auto &b : k_backend_catalog) {
        switch (b.kind) {
        case BackendKind::job:      // on unless --disable-backend: no flag, no spec word
        case BackendKind::derived:  // with the backends it derives from, unless disabled
            EXPECT_TRUE(b.flag.empty()) << b.name;
            EXPECT_TRUE(b.spec_keyword.empty()) << b.name;
            break;
        case BackendKind::node:
        case BackendKind::device:
        case BackendKind::perfhw:  // colmet-node's --enable-* flag, a spec word
            EXPECT_EQ(b.flag.substr(0, 9), "--enable-") << b.name;
            EXPECT_FALSE(b.spec_keyword.empty()) << b.name;
            break;
        }
    }
}

TEST(BackendCatalog, LookupsFindTheRows)
{
    ASSERT_NE(backend_info("rapl"), nullptr);
    EXPECT_EQ(backend_info("rapl")->flag, "--enable-RAPL");
    EXPECT_EQ(backend_info("no_such_backend"), nullptr);
    ASSERT_NE(backend_for_spec_keyword("temperature"), nullptr);
    EXPECT_EQ(backend_for_spec_keyword("temperature")->kind, BackendKind::node);
    EXPECT_EQ(backend_for_spec_keyword(""), nullptr);
    EXPECT_EQ(k_perfhw_flag, "--enable-perfhw");
}
