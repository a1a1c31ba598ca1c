// The bounded msgpack reader under the decoder: every msgpack format (each
// width of each type, as msgpack-c packs them), truncation at every byte,
// the never-used byte 0xc1.
#include "wire/reader.hpp"

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include <cstdint>
#include <limits>
#include <string>

using colmet::wire::mp::Cursor;
using colmet::wire::mp::FrameError;
using colmet::wire::mp::Item;
using colmet::wire::mp::Type;

namespace {

// Pack one value with msgpack-c (the reference encoder).
template <typename F>
std::string packed(F &&fill)
{
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    fill(pk);
    return {buf.data(), buf.size()};
}

Item read_one(const std::string &bytes)
{
    Cursor c(bytes.data(), bytes.data() + bytes.size());
    Item it = c.next();
    EXPECT_EQ(c.left(), 0u) << "the whole item was read";
    return it;
}

std::string error_of(const std::string &bytes)
{
    Cursor c(bytes.data(), bytes.data() + bytes.size());
    try {
        c.next();
    } catch (const FrameError &e) {
        return e.message;
    }
    return "<read>";
}

}  // namespace

TEST(WireReader, unsigned_integers_of_every_width)
{
    for (uint64_t v :
         {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{255}, uint64_t{256}, uint64_t{65535}, uint64_t{65536},
          uint64_t{4294967295u}, uint64_t{4294967296u}, std::numeric_limits<uint64_t>::max()}) {
        SCOPED_TRACE(v);
        Item it = read_one(packed([&](auto &pk) { pk.pack_uint64(v); }));
        EXPECT_EQ(it.type, Type::uint);
        EXPECT_EQ(it.u, v);
    }
}

TEST(WireReader, signed_integers_of_every_width_and_non_negative_ones_as_unsigned)
{
    for (int64_t v :
         {int64_t{-1}, int64_t{-32}, int64_t{-33}, int64_t{-128}, int64_t{-129}, int64_t{-32768}, int64_t{-32769},
          int64_t{-2147483648LL}, int64_t{-2147483649LL}, std::numeric_limits<int64_t>::min()}) {
        SCOPED_TRACE(v);
        Item it = read_one(packed([&](auto &pk) { pk.pack_int64(v); }));
        EXPECT_EQ(it.type, Type::sint);
        EXPECT_EQ(it.i, v);
    }
    // Fixed-width signed encodings of non-negative values (msgpack-c packs
    // pack_fix_int* with the signed tags): read as unsigned, as msgpack-c does.
    EXPECT_EQ(read_one(packed([](auto &pk) { pk.pack_fix_int8(5); })).type, Type::uint);
    EXPECT_EQ(read_one(packed([](auto &pk) { pk.pack_fix_int16(300); })).u, 300u);
    EXPECT_EQ(read_one(packed([](auto &pk) { pk.pack_fix_int32(70000); })).u, 70000u);
    EXPECT_EQ(read_one(packed([](auto &pk) { pk.pack_fix_int64(1LL << 40); })).u, uint64_t{1} << 40);
    EXPECT_EQ(read_one(packed([](auto &pk) { pk.pack_fix_int64(-5); })).i, -5);
}

TEST(WireReader, floats_nil_and_booleans)
{
    Item f32 = read_one(packed([](auto &pk) { pk.pack_float(1.5f); }));
    EXPECT_EQ(f32.type, Type::f32);
    EXPECT_EQ(f32.f, 1.5);
    Item f64 = read_one(packed([](auto &pk) { pk.pack_double(-2.25e300); }));
    EXPECT_EQ(f64.type, Type::f64);
    EXPECT_EQ(f64.f, -2.25e300);
    EXPECT_EQ(read_one(packed([](auto &pk) { pk.pack_nil(); })).type, Type::nil);
    Item t = read_one(packed([](auto &pk) { pk.pack_true(); }));
    EXPECT_EQ(t.type, Type::boolean);
    EXPECT_TRUE(t.b);
    EXPECT_FALSE(read_one(packed([](auto &pk) { pk.pack_false(); })).b);
}

TEST(WireReader, strings_bin_and_ext_of_every_length_width)
{
    for (size_t n : {size_t{0}, size_t{31}, size_t{32}, size_t{255}, size_t{256}, size_t{65535}, size_t{65536}}) {
        SCOPED_TRACE(n);
        std::string s(n, 'x');
        if (n > 0)
            s.back() = 'y';
        const std::string frame = packed([&](auto &pk) { pk.pack(s); });  // it.str points into it
        Item it = read_one(frame);
        EXPECT_EQ(it.type, Type::str);
        EXPECT_EQ(it.view(), s);
        Item bin = read_one(packed([&](auto &pk) {
            pk.pack_bin(static_cast<uint32_t>(n));
            pk.pack_bin_body(s.data(), static_cast<uint32_t>(n));
        }));
        EXPECT_EQ(bin.type, Type::bin);
        EXPECT_EQ(bin.size, n);
        Item ext = read_one(packed([&](auto &pk) {
            pk.pack_ext(n, 7);
            pk.pack_ext_body(s.data(), static_cast<uint32_t>(n));
        }));
        EXPECT_EQ(ext.type, Type::ext);
        EXPECT_EQ(ext.size, n);
    }
}

TEST(WireReader, arrays_and_maps_of_every_header_width)
{
    for (uint32_t n : {0u, 15u, 16u, 65535u, 65536u}) {
        SCOPED_TRACE(n);
        std::string a = packed([&](auto &pk) {
            pk.pack_array(n);
            for (uint32_t i = 0; i < n; ++i)
                pk.pack_uint32(i);
        });
        Cursor c(a.data(), a.data() + a.size());
        Item head = c.next();
        EXPECT_EQ(head.type, Type::array);
        EXPECT_EQ(head.size, n);
        for (uint32_t i = 0; i < n; ++i)
            ASSERT_EQ(c.next().u, i);
        EXPECT_EQ(c.left(), 0u);
        std::string m = packed([&](auto &pk) { pk.pack_map(n); });
        Item map = read_one(m);
        EXPECT_EQ(map.type, Type::map);
        EXPECT_EQ(map.size, n);
    }
}

TEST(WireReader, every_truncation_is_reported_never_read_past)
{
    std::string all = packed([](auto &pk) {
        pk.pack_array(9);
        pk.pack_uint64(1ULL << 40);
        pk.pack_int32(-100000);
        pk.pack_double(3.5);
        pk.pack_float(2.5f);
        pk.pack(std::string(300, 's'));
        pk.pack_bin(3);
        pk.pack_bin_body("abc", 3);
        pk.pack_ext(2, 1);
        pk.pack_ext_body("xy", 2);
        pk.pack_map(70000);
        pk.pack_array(70000);
    });
    for (size_t cut = 0; cut < all.size(); ++cut) {
        // Each cut frame lives in its own allocation, so ASan catches any read past it.
        std::string part = all.substr(0, cut);
        Cursor c(part.data(), part.data() + part.size());
        bool reported = false;
        try {
            for (int i = 0; i < 10; ++i)
                c.next();
        } catch (const FrameError &e) {
            reported = e.message == "truncated message";
        }
        EXPECT_TRUE(reported) << "cut at " << cut;
    }
}

TEST(WireReader, byte_0xc1_is_not_msgpack_and_says_where)
{
    EXPECT_EQ(error_of(std::string("\xc1", 1)), "not valid msgpack (byte 0xc1 at offset 0)");
    std::string two("\x01\xc1", 2);
    Cursor c(two.data(), two.data() + two.size());
    EXPECT_EQ(c.next().u, 1u);
    try {
        c.next();
        ADD_FAILURE() << "0xc1 was read";
    } catch (const FrameError &e) {
        EXPECT_EQ(e.message, "not valid msgpack (byte 0xc1 at offset 1)");
    }
}

TEST(WireReader, skip_if_equal_moves_only_past_equal_bytes)
{
    std::string bytes = packed([](auto &pk) {
        pk.pack_array(1);
        pk.pack(std::string("usage"));
        pk.pack_uint8(7);
    });
    const std::string first = bytes.substr(0, bytes.size() - 1);
    Cursor c(bytes.data(), bytes.data() + bytes.size());
    EXPECT_FALSE(c.skip_if_equal(bytes + "x")) << "longer than what is left";
    EXPECT_FALSE(c.skip_if_equal(std::string("\x91\xa5usagf", 7)));
    EXPECT_EQ(c.pos(), bytes.data());
    EXPECT_TRUE(c.skip_if_equal(first));
    EXPECT_EQ(c.next().u, 7u);
}
