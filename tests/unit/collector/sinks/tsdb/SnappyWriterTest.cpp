// SnappyWriter's blocks, read back by libsnappy: every kind and size of
// element, and random mixes of them against the bytes they stand for.
#include "collector/sinks/tsdb/SnappyWriter.hpp"

#include <gtest/gtest.h>
#include <snappy.h>

#include <algorithm>
#include <random>
#include <string>

namespace colmet::collector::tsdb {
namespace {

std::string uncompressed(const std::string &block)
{
    std::string raw;
    EXPECT_TRUE(snappy::IsValidCompressedBuffer(block.data(), block.size()));
    EXPECT_TRUE(snappy::Uncompress(block.data(), block.size(), &raw));
    return raw;
}

std::string pattern(size_t n, unsigned seed)
{
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>((i * 131 + size_t{seed} * 7 + i / 251) & 0xff);
    return s;
}

TEST(SnappyWriterTest, an_empty_block_is_one_zero_byte)
{
    SnappyWriter w;
    EXPECT_EQ(w.take(), std::string(1, '\0'));
    EXPECT_EQ(uncompressed(w.take()), "");
}

TEST(SnappyWriterTest, literals_of_every_length_class)
{
    // 1 and 60: the length in the tag; 61, 256: one more byte; 257, 65536:
    // two; 65537 and 16 MiB + 1: three and four.
    for (size_t n : {size_t{1}, size_t{60}, size_t{61}, size_t{256}, size_t{257}, size_t{65536}, size_t{65537},
                     (size_t{1} << 24) + 1}) {
        SnappyWriter w;
        const std::string data = pattern(n, static_cast<unsigned>(n));
        w.literal(data.data(), 1);  // one literal made of two calls
        w.literal(data.data() + 1, n - 1);
        EXPECT_EQ(w.position(), n);
        EXPECT_EQ(uncompressed(w.take()), data) << n;
        EXPECT_EQ(w.position(), 0u);
    }
}

TEST(SnappyWriterTest, copies_of_every_length_and_offset_class)
{
    // Offsets under 2 KiB (the two-byte form for lengths 4 to 11), under
    // 64 KiB, and beyond; lengths around the 64 of one element and the 4
    // of the short form.
    for (size_t offset :
         {size_t{1}, size_t{7}, size_t{2047}, size_t{2048}, size_t{65535}, size_t{65536}, size_t{200000}}) {
        for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{11}, size_t{12}, size_t{64}, size_t{65}, size_t{67},
                         size_t{68}, size_t{128}, size_t{1000}}) {
            if (n > offset)
                continue;
            SnappyWriter w;
            const std::string data = pattern(offset, static_cast<unsigned>(n));
            w.literal(data.data(), data.size());
            w.copy(0, n);
            w.literal("x", 1);
            EXPECT_EQ(uncompressed(w.take()), data + data.substr(0, n) + "x") << offset << " " << n;
        }
    }
}

TEST(SnappyWriterTest, random_mixes_read_back_as_the_bytes_they_stand_for)
{
    std::mt19937_64 rng(20261205);
    SnappyWriter w;
    for (int block = 0; block < 40; ++block) {
        std::string expected;
        const int elements = static_cast<int>(rng() % 400);
        for (int i = 0; i < elements; ++i) {
            if (expected.empty() || rng() % 3 == 0) {
                const std::string data = pattern(rng() % 300, static_cast<unsigned>(rng()));
                w.literal(data.data(), data.size());
                expected += data;
            } else {
                const size_t from = rng() % expected.size();
                const size_t n = rng() % (std::min<size_t>(expected.size() - from, 300) + 1);
                w.copy(from, n);
                expected += expected.substr(from, n);
            }
            ASSERT_EQ(w.position(), expected.size());
        }
        const std::string body = w.take();
        ASSERT_EQ(uncompressed(body), expected) << block;
    }
}

}  // namespace
}  // namespace colmet::collector::tsdb
