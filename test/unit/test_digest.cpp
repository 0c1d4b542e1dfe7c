// MultisetDigest and the digest's text/byte forms (docs/row-image.md): the
// checksum of a multiset of rows is the 128-bit sum of the row hashes modulo
// 2^128 plus the row count, printed as "v1:<count>:<32 lowercase hex>".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "random_digests.hpp"

namespace {

using pg_idempotent::core::Digest128;
using pg_idempotent::core::digest_text_count;
using pg_idempotent::core::from_bytes;
using pg_idempotent::core::kChecksumFormat;
using pg_idempotent::core::MultisetDigest;
using pg_idempotent::core::to_bytes;
using pg_idempotent::core::to_hex;
using pg_idempotent::test::random_digests;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

MultisetDigest digest_of(const std::vector<Digest128>& rows)
{
    MultisetDigest m;
    for (const Digest128& d : rows)
        m.add(d);
    return m;
}

TEST(DigestHex, BigEndianLowercase)
{
    EXPECT_EQ(to_hex(Digest128{0, 0}), "00000000000000000000000000000000");
    EXPECT_EQ(to_hex(Digest128{0x0123456789abcdefULL, 0xfedcba9876543210ULL}), "0123456789abcdeffedcba9876543210");
    EXPECT_EQ(to_hex(Digest128{0, 1}), "00000000000000000000000000000001");
    EXPECT_EQ(to_hex(Digest128{1, 0}), "00000000000000010000000000000000");
    EXPECT_EQ(to_hex(Digest128{kMax, kMax}), "ffffffffffffffffffffffffffffffff");
    EXPECT_EQ(to_hex(Digest128{0xABCDEF0000000000ULL, 0}).substr(0, 6), "abcdef");
}

TEST(DigestBytes, BigEndianMostSignificantFirst)
{
    unsigned char out[16];
    to_bytes(Digest128{0x0102030405060708ULL, 0x090a0b0c0d0e0f10ULL}, out);
    for (int i = 0; i < 16; ++i)
        EXPECT_EQ(out[i], i + 1) << "byte " << i;

    to_bytes(Digest128{0, 0xff}, out);
    for (int i = 0; i < 15; ++i)
        EXPECT_EQ(out[i], 0) << "byte " << i;
    EXPECT_EQ(out[15], 0xff);
}

TEST(DigestBytes, FromBytesInvertsToBytes)
{
    const unsigned char in[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    EXPECT_EQ(from_bytes(in), (Digest128{0x0102030405060708ULL, 0x090a0b0c0d0e0f10ULL}));
    for (const Digest128& d : random_digests(50, 11)) {
        unsigned char out[16];
        to_bytes(d, out);
        EXPECT_EQ(from_bytes(out), d);
    }
}

TEST(DigestBytes, AgreesWithHex)
{
    for (const Digest128& d : random_digests(50, 7)) {
        unsigned char out[16];
        to_bytes(d, out);
        static const char kHex[] = "0123456789abcdef";
        std::string from_bytes;
        for (unsigned char b : out) {
            from_bytes.push_back(kHex[b >> 4]);
            from_bytes.push_back(kHex[b & 0xF]);
        }
        EXPECT_EQ(from_bytes, to_hex(d));
    }
}

TEST(Multiset, EmptyText)
{
    MultisetDigest m;
    EXPECT_EQ(m.count(), 0u);
    EXPECT_EQ(m.text(), "v1:0:00000000000000000000000000000000");
    EXPECT_STREQ(kChecksumFormat, "v1");
}

TEST(Multiset, TextFormatIsExact)
{
    MultisetDigest m;
    m.add(Digest128{0x0123456789abcdefULL, 0xfedcba9876543210ULL});
    EXPECT_EQ(m.text(), "v1:1:0123456789abcdeffedcba9876543210");

    const std::regex shape("^v1:(0|[1-9][0-9]*):[0-9a-f]{32}$");
    const MultisetDigest big = digest_of(random_digests(1234, 99));
    EXPECT_TRUE(std::regex_match(big.text(), shape)) << big.text();
    EXPECT_EQ(big.text(), "v1:1234:" + to_hex(big.sum()));
}

TEST(Multiset, SumIsPlainAddition)
{
    MultisetDigest m;
    m.add(Digest128{1, 2});
    m.add(Digest128{3, 4});
    EXPECT_EQ(m.sum(), (Digest128{4, 6}));
    EXPECT_EQ(m.count(), 2u);
}

TEST(Multiset, CarryFromLowToHigh)
{
    MultisetDigest m;
    m.add(Digest128{0, kMax});
    m.add(Digest128{0, 1});
    EXPECT_EQ(m.sum(), (Digest128{1, 0}));
    EXPECT_EQ(m.text(), "v1:2:00000000000000010000000000000000");
}

TEST(Multiset, CarryWhenBothLowHalvesAreLarge)
{
    MultisetDigest m;
    m.add(Digest128{5, kMax});
    m.add(Digest128{7, kMax});
    EXPECT_EQ(m.sum(), (Digest128{13, kMax - 1}));
}

TEST(Multiset, WrapsModulo2To128)
{
    MultisetDigest m;
    m.add(Digest128{kMax, kMax});
    m.add(Digest128{0, 1});
    EXPECT_EQ(m.sum(), (Digest128{0, 0}));
    // The sum wrapped to zero but the count still tells it from the empty set.
    EXPECT_EQ(m.text(), "v1:2:00000000000000000000000000000000");
    EXPECT_NE(m.text(), MultisetDigest().text());
}

TEST(Multiset, MergeCarries)
{
    MultisetDigest a;
    a.add(Digest128{0, kMax});
    MultisetDigest b;
    b.add(Digest128{0, 1});
    a.merge(b);
    EXPECT_EQ(a.sum(), (Digest128{1, 0}));
    EXPECT_EQ(a.count(), 2u);
}

TEST(Multiset, OrderIndependent)
{
    std::vector<Digest128> rows = random_digests(1000, 42);
    const std::string reference = digest_of(rows).text();
    EXPECT_EQ(reference.rfind("v1:1000:", 0), 0u) << reference;

    std::mt19937 rng(1);
    for (int i = 0; i < 20; ++i) {
        std::shuffle(rows.begin(), rows.end(), rng);
        EXPECT_EQ(digest_of(rows).text(), reference) << "permutation " << i;
    }
    std::reverse(rows.begin(), rows.end());
    EXPECT_EQ(digest_of(rows).text(), reference);
    std::sort(rows.begin(), rows.end(),
              [](const Digest128& x, const Digest128& y) { return x.hi != y.hi ? x.hi < y.hi : x.lo < y.lo; });
    EXPECT_EQ(digest_of(rows).text(), reference);
}

TEST(Multiset, DuplicatesAreCounted)
{
    const std::vector<Digest128> rows = random_digests(1000, 43);
    std::vector<Digest128> doubled = rows;
    doubled.insert(doubled.end(), rows.begin(), rows.end());
    std::vector<Digest128> quadrupled = doubled;
    quadrupled.insert(quadrupled.end(), doubled.begin(), doubled.end());

    const std::string once = digest_of(rows).text();
    const std::string twice = digest_of(doubled).text();
    const std::string four = digest_of(quadrupled).text();
    EXPECT_NE(once, twice);
    EXPECT_NE(once, four);
    EXPECT_NE(twice, four);
    EXPECT_EQ(digest_of(doubled).count(), 2000u);
    EXPECT_EQ(digest_of(quadrupled).count(), 4000u);

    // The sums themselves differ too, not only the counts.
    EXPECT_NE(digest_of(rows).sum(), digest_of(doubled).sum());
    EXPECT_NE(digest_of(doubled).sum(), digest_of(quadrupled).sum());
}

TEST(Multiset, DuplicatesDoNotCancel)
{
    // With XOR, {x, x} would equal {}. Here it must not.
    for (const Digest128& x : random_digests(100, 44)) {
        MultisetDigest pair;
        pair.add(x);
        pair.add(x);
        EXPECT_NE(pair.text(), MultisetDigest().text());
        EXPECT_NE(pair.sum(), (Digest128{0, 0}));

        // {x, x, y} must differ from {y}, in the sum and not only the count.
        const Digest128 y{0x1111, 0x2222};
        MultisetDigest xxy = pair;
        xxy.add(y);
        MultisetDigest just_y;
        just_y.add(y);
        EXPECT_NE(xxy.sum(), just_y.sum());
    }
}

TEST(Multiset, SwappingARowForAnotherChangesTheSum)
{
    std::vector<Digest128> rows = random_digests(100, 45);
    const MultisetDigest before = digest_of(rows);
    rows[50].lo ^= 1;  // "changing" one row keeps the count
    const MultisetDigest after = digest_of(rows);
    EXPECT_EQ(before.count(), after.count());
    EXPECT_NE(before.text(), after.text());
}

TEST(Multiset, MergeEqualsAddingAll)
{
    const std::vector<Digest128> rows = random_digests(1000, 46);
    const MultisetDigest all = digest_of(rows);

    // Split into uneven parts, as partitions would be.
    const std::size_t cuts[] = {0, 1, 250, 251, 999, 1000};
    MultisetDigest merged;
    for (std::size_t i = 0; i + 1 < std::size(cuts); ++i) {
        MultisetDigest part;
        for (std::size_t j = cuts[i]; j < cuts[i + 1]; ++j)
            part.add(rows[j]);
        merged.merge(part);
    }
    EXPECT_EQ(merged.text(), all.text());
    EXPECT_EQ(merged.count(), 1000u);
    EXPECT_EQ(merged.sum(), all.sum());

    // Merging an empty digest changes nothing; merging into one copies it.
    MultisetDigest copy;
    copy.merge(all);
    copy.merge(MultisetDigest());
    EXPECT_EQ(copy.text(), all.text());
}

TEST(Multiset, CountIsInTheText)
{
    MultisetDigest m;
    for (std::uint64_t i = 1; i <= 12; ++i) {
        m.add(Digest128{0, 0});  // all-zero hashes: only the count moves
        EXPECT_EQ(m.text(), "v1:" + std::to_string(i) + ":00000000000000000000000000000000");
    }
}

// A parallel worker's partial digest travels as its sum and count: rebuilt
// from those parts it is the same digest, and merges as the original would.
TEST(Multiset, FromPartsRestoresTheDigest)
{
    MultisetDigest a;
    a.add(Digest128{0x0123456789abcdefULL, 0xfedcba9876543210ULL});
    a.add(Digest128{~0ULL, ~0ULL});
    const MultisetDigest restored = MultisetDigest::from_parts(a.sum(), a.count());
    EXPECT_EQ(restored.text(), a.text());
    EXPECT_EQ(restored.count(), 2u);

    MultisetDigest b;
    b.add(Digest128{1, 2});
    MultisetDigest direct = a;
    direct.merge(b);
    MultisetDigest via_parts = MultisetDigest::from_parts(b.sum(), b.count());
    via_parts.merge(restored);
    EXPECT_EQ(via_parts.text(), direct.text());
    EXPECT_EQ(MultisetDigest::from_parts(Digest128{}, 0).text(), MultisetDigest().text());
}

TEST(DigestTextCount, ReadsTheCount)
{
    EXPECT_EQ(digest_text_count("v1:0:00000000000000000000000000000000"), 0u);
    EXPECT_EQ(digest_text_count("v1:1000000:ac1f862585cf8306fe271277c4cdcdde"), 1000000u);
    MultisetDigest m;
    for (int i = 0; i < 7; ++i)
        m.add(Digest128{0, static_cast<std::uint64_t>(i)});
    EXPECT_EQ(digest_text_count(m.text()), 7u);
    EXPECT_EQ(digest_text_count("v1:18446744073709551615:0"), 18446744073709551615ULL);
}

TEST(DigestTextCount, OtherShapesAreZero)
{
    EXPECT_EQ(digest_text_count(""), 0u);
    EXPECT_EQ(digest_text_count("v1:"), 0u);
    EXPECT_EQ(digest_text_count("v1:12"), 0u);      // no second colon
    EXPECT_EQ(digest_text_count("v1::abc"), 0u);    // no digits
    EXPECT_EQ(digest_text_count("v2:12:abc"), 0u);  // another format
    EXPECT_EQ(digest_text_count("v1:1x:abc"), 0u);
}

}  // namespace

namespace {

// A digest's sum as a decimal number and back (checksum of a Citus
// distributed table: PostgreSQL's sum(numeric) of the row hashes, any size,
// taken modulo 2^128).
TEST(DigestDecimal, RoundTripsAndWrapsModulo2To128)
{
    using pg_idempotent::core::Digest128;
    using pg_idempotent::core::digest_decimal;
    using pg_idempotent::core::digest_from_decimal;
    EXPECT_EQ(digest_decimal(Digest128{0, 0}), "0");
    EXPECT_EQ(digest_decimal(Digest128{0, 12345}), "12345");
    EXPECT_EQ(digest_decimal(Digest128{1, 0}), "18446744073709551616");
    const Digest128 max{~0ULL, ~0ULL};
    EXPECT_EQ(digest_decimal(max), "340282366920938463463374607431768211455");
    EXPECT_EQ(*digest_from_decimal(digest_decimal(max)), max);
    EXPECT_EQ(*digest_from_decimal("18446744073709551616"), (Digest128{1, 0}));
    // 2^128 + 5: the sum of two hashes that overflowed wraps as the digest does.
    EXPECT_EQ(*digest_from_decimal("340282366920938463463374607431768211461"), (Digest128{0, 5}));
    // Adding as decimals then reducing equals adding modulo 2^128.
    pg_idempotent::core::MultisetDigest d;
    d.add(max);
    d.add(Digest128{0, 7});
    EXPECT_EQ(d.sum(), (Digest128{0, 6}));
    EXPECT_FALSE(digest_from_decimal("").has_value());
    EXPECT_FALSE(digest_from_decimal("12a").has_value());
    EXPECT_FALSE(digest_from_decimal("-1").has_value());
}

}  // namespace
