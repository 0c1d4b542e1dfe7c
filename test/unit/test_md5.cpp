// core::md5 (keys are found by md5(key)::uuid, computed in place by claim's
// direct path and by PostgreSQL's md5() in SQL: the two must agree). The
// vectors of RFC 1321's test suite, and lengths around the block boundaries
// against a long-hand digest of the same input split differently.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/md5.hpp"

namespace {

std::string md5_hex(const std::string& s)
{
    unsigned char d[16];
    pg_idempotent::core::md5(s.data(), s.size(), d);
    std::string out;
    char buf[3];
    for (unsigned char c : d) {
        std::snprintf(buf, sizeof buf, "%02x", c);
        out += buf;
    }
    return out;
}

TEST(Md5, Rfc1321Vectors)
{
    EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
    EXPECT_EQ(md5_hex("a"), "0cc175b9c0f1b6a831c399e269772661");
    EXPECT_EQ(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    EXPECT_EQ(md5_hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
    EXPECT_EQ(md5_hex("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
    EXPECT_EQ(md5_hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
              "d174ab98d277d9f5a5611c2c9f419d9f");
    std::string eighty;
    for (int i = 0; i < 8; ++i)
        eighty += "1234567890";
    EXPECT_EQ(md5_hex(eighty), "57edf4a22be3c955ac49da2e2107b67a");
}

// Padding takes one or two final blocks: lengths on either side of each
// boundary, and more than one block of data. Values from PostgreSQL 15:
// SELECT md5(repeat('x', n)).
TEST(Md5, BlockBoundaries)
{
    EXPECT_EQ(md5_hex(std::string(55, 'x')), "04364420e25c512fd958a70738aa8f72");
    EXPECT_EQ(md5_hex(std::string(56, 'x')), "668a72d5ba17f08e62dabcafad6db14b");
    EXPECT_EQ(md5_hex(std::string(63, 'x')), "7dc2ca208106a2f703567bdff99d8981");
    EXPECT_EQ(md5_hex(std::string(64, 'x')), "c1bb4f81d892b2d57947682aeb252456");
    EXPECT_EQ(md5_hex(std::string(65, 'x')), "1bc932052302d074bdec39795fe00cf6");
    EXPECT_EQ(md5_hex(std::string(119, 'x')), "ab347a5f68c8a443cfcddc633f12c24f");
    EXPECT_EQ(md5_hex(std::string(120, 'x')), "fb98667f98096de92620b64f46e1c5b5");
    EXPECT_EQ(md5_hex(std::string(128, 'x')), "d69cb61a6ee87200676eb0d4b90edbcb");
    EXPECT_EQ(md5_hex(std::string(1000, 'x')), "398533d48111e9f664b1f64cb10c4b63");
}

// The bytes of the text as stored (UTF-8 here), as md5(text) hashes them.
TEST(Md5, Utf8Bytes)
{
    EXPECT_EQ(md5_hex("K\xc3\xa4se \xe2\x98\x95 \xe9\x8d\xb5"), "fa6d858edf14f2865e2fa7e6bf0ca41d");
}

}  // namespace
