// RowHasher against hand-built v1 row images (docs/row-image.md):
//
//   row    := u32le(column count) column*
//   column := 0x00                        -- NULL
//           | 0x01 u32le(length) bytes    -- a value's stored image
//
// The images below are spelled out byte by byte from that grammar, not
// produced by the code under test, so a change to the encoding fails here.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "core/row_image.hpp"

namespace {

using pg_idempotent::core::Digest128;
using pg_idempotent::core::RowHasher;
using pg_idempotent::core::to_hex;
using Bytes = std::vector<unsigned char>;

Digest128 hash_bytes(const Bytes& b)
{
    return RowHasher::hash_image(b.data(), b.size());
}

// A column's value for the streaming helper below: nullopt-like via flag.
struct Col {
    bool is_null;
    std::string bytes;
};

Col null_col()
{
    return Col{true, {}};
}
Col val(std::string s)
{
    return Col{false, std::move(s)};
}

Digest128 hash_streamed(RowHasher& h, const std::vector<Col>& cols)
{
    h.begin_row(static_cast<std::uint32_t>(cols.size()));
    for (const Col& c : cols) {
        if (c.is_null)
            h.add_null();
        else
            h.add_value(c.bytes.data(), c.bytes.size());
    }
    return h.end_row();
}

void put_u32le(Bytes& out, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// The image laid out at once, built independently of RowHasher.
Bytes image_of(const std::vector<Col>& cols)
{
    Bytes out;
    put_u32le(out, static_cast<std::uint32_t>(cols.size()));
    for (const Col& c : cols) {
        if (c.is_null) {
            out.push_back(0x00);
        } else {
            out.push_back(0x01);
            put_u32le(out, static_cast<std::uint32_t>(c.bytes.size()));
            out.insert(out.end(), c.bytes.begin(), c.bytes.end());
        }
    }
    return out;
}

// ---- literal images, written out byte for byte ----------------------------

// One int4 column holding 42: stored little-endian on x86-64.
const Bytes kInt4_42 = {0x01, 0x00, 0x00, 0x00,   // 1 column
                        0x01,                     // not NULL
                        0x04, 0x00, 0x00, 0x00,   // length 4
                        0x2a, 0x00, 0x00, 0x00};  // 42
// One text column 'abc' (the varlena payload, no header).
const Bytes kTextAbc = {0x01, 0x00, 0x00, 0x00,  //
                        0x01, 0x03, 0x00, 0x00, 0x00, 'a', 'b', 'c'};
// One NULL column.
const Bytes kNull = {0x01, 0x00, 0x00, 0x00, 0x00};
// One empty-string column.
const Bytes kEmpty = {0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
// Zero columns.
const Bytes kZeroColumns = {0x00, 0x00, 0x00, 0x00};

const std::string kInt4_42Value("\x2a\x00\x00\x00", 4);

TEST(RowImage, HandBuiltInt4MatchesStreamed)
{
    RowHasher h;
    EXPECT_EQ(image_of({val(kInt4_42Value)}), kInt4_42);  // the builder agrees
    EXPECT_EQ(hash_streamed(h, {val(kInt4_42Value)}), hash_bytes(kInt4_42));
}

TEST(RowImage, HandBuiltTextMatchesStreamed)
{
    RowHasher h;
    EXPECT_EQ(image_of({val("abc")}), kTextAbc);
    EXPECT_EQ(hash_streamed(h, {val("abc")}), hash_bytes(kTextAbc));
}

TEST(RowImage, HandBuiltNullMatchesStreamed)
{
    RowHasher h;
    EXPECT_EQ(image_of({null_col()}), kNull);
    EXPECT_EQ(hash_streamed(h, {null_col()}), hash_bytes(kNull));
}

TEST(RowImage, HandBuiltEmptyStringMatchesStreamed)
{
    RowHasher h;
    EXPECT_EQ(image_of({val("")}), kEmpty);
    EXPECT_EQ(hash_streamed(h, {val("")}), hash_bytes(kEmpty));
    // add_value with a null pointer and length 0 is an empty value, not NULL.
    h.begin_row(1);
    h.add_value(nullptr, 0);
    EXPECT_EQ(h.end_row(), hash_bytes(kEmpty));
}

TEST(RowImage, HandBuiltZeroColumnsMatchesStreamed)
{
    RowHasher h;
    EXPECT_EQ(hash_streamed(h, {}), hash_bytes(kZeroColumns));
    // A zero-column row is still a row: its hash is not that of no bytes.
    EXPECT_NE(hash_bytes(kZeroColumns), RowHasher::hash_image(nullptr, 0));
}

TEST(RowImage, MultiColumnMatchesHandBuilt)
{
    const Bytes expected = {0x03, 0x00, 0x00, 0x00,                                 // 3 columns
                            0x01, 0x02, 0x00, 0x00, 0x00, 'h',  'i',                // 'hi'
                            0x00,                                                   // NULL
                            0x01, 0x04, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00};  // int4 42
    RowHasher h;
    EXPECT_EQ(hash_streamed(h, {val("hi"), null_col(), val(kInt4_42Value)}), hash_bytes(expected));
}

// ---- pinned digests ---------------------------------------------------------
// FORMAT GUARD. These constants are the v1 row hashes (XXH3-128, seed 0) of
// the hand-built images above. They are what every stored "v1:" checksum was
// computed with. If one of them changes, the row image or the hash changed:
// that is a new format, which must be released as "v2" (kChecksumFormat and
// docs/row-image.md), never by editing these literals.
TEST(RowImage, PinnedDigestsV1)
{
    EXPECT_EQ(to_hex(hash_bytes(kInt4_42)), "08dcb54682af69d75485f8a1ba7b6a69");
    EXPECT_EQ(to_hex(hash_bytes(kTextAbc)), "d2667382b7af05310a548ee2070931fc");
    EXPECT_EQ(to_hex(hash_bytes(kNull)), "624d00ca1a5816e84487fda79cc1828d");
}

// ---- what must differ -------------------------------------------------------

TEST(RowImage, NullDiffersFromEmptyString)
{
    RowHasher h;
    const Digest128 null_row = hash_streamed(h, {null_col()});
    const Digest128 empty_row = hash_streamed(h, {val("")});
    EXPECT_NE(null_row, empty_row);
    EXPECT_NE(hash_bytes(kNull), hash_bytes(kEmpty));
}

TEST(RowImage, ColumnOrderMatters)
{
    RowHasher h;
    EXPECT_NE(hash_streamed(h, {val("a"), val("b")}), hash_streamed(h, {val("b"), val("a")}));
    EXPECT_NE(hash_streamed(h, {val("x"), null_col()}), hash_streamed(h, {null_col(), val("x")}));
}

TEST(RowImage, LengthPrefixSeparatesValues)
{
    RowHasher h;
    // Same concatenated bytes "abc", different column boundaries.
    EXPECT_NE(hash_streamed(h, {val("ab"), val("c")}), hash_streamed(h, {val("a"), val("bc")}));
    EXPECT_NE(image_of({val("ab"), val("c")}), image_of({val("a"), val("bc")}));
}

TEST(RowImage, ColumnCountMatters)
{
    RowHasher h;
    EXPECT_NE(hash_streamed(h, {}), hash_streamed(h, {null_col()}));
    EXPECT_NE(hash_streamed(h, {null_col()}), hash_streamed(h, {null_col(), null_col()}));
    EXPECT_NE(hash_streamed(h, {val("")}), hash_streamed(h, {val(""), val("")}));
}

TEST(RowImage, HasherIsReusableAcrossRows)
{
    RowHasher h;
    const Digest128 first = hash_streamed(h, {val("abc")});
    hash_streamed(h, {val(std::string(50000, 'z')), null_col()});  // a streaming row between
    EXPECT_EQ(hash_streamed(h, {val("abc")}), first);
    EXPECT_EQ(first, hash_bytes(kTextAbc));
}

// ---- rows larger than the 8192-byte internal buffer -------------------------

TEST(RowImage, HugeValueStreamsLikeOneShot)
{
    std::mt19937 rng(12345);
    std::string big(100 * 1024, '\0');
    for (char& c : big)
        c = static_cast<char>(rng());
    const std::vector<Col> row = {val("key"), val(big), null_col()};
    RowHasher h;
    EXPECT_EQ(hash_streamed(h, row), hash_bytes(image_of(row)));
    // And a one-byte change deep in the value is seen.
    std::string changed = big;
    changed[77777] = static_cast<char>(changed[77777] ^ 1);
    EXPECT_NE(hash_streamed(h, {val("key"), val(changed), null_col()}), hash_streamed(h, row));
}

TEST(RowImage, ManyColumnsCrossBufferAtOddOffsets)
{
    // Columns of 1..n bytes plus NULLs: the 8192-byte boundary falls inside
    // headers and values at many different offsets as n varies.
    for (std::size_t n : {136u, 137u, 138u, 139u, 140u, 151u, 200u, 333u}) {
        std::vector<Col> row;
        for (std::size_t i = 0; i < n; ++i) {
            if (i % 7 == 3)
                row.push_back(null_col());
            else
                row.push_back(val(std::string(i, static_cast<char>('a' + i % 26))));
        }
        const Bytes image = image_of(row);
        ASSERT_GT(image.size(), 8192u) << "n=" << n;
        RowHasher h;
        EXPECT_EQ(hash_streamed(h, row), hash_bytes(image)) << "n=" << n;
    }
}

TEST(RowImage, EveryLengthAroundTheBufferEdge)
{
    // One value whose image ends exactly before, at and after 8192 bytes, and
    // a second value that starts on either side of the edge.
    RowHasher h;
    for (std::size_t len = 8170; len <= 8200; ++len) {
        const std::vector<Col> one = {val(std::string(len, 'q'))};
        EXPECT_EQ(hash_streamed(h, one), hash_bytes(image_of(one))) << "len=" << len;
        const std::vector<Col> two = {val(std::string(len, 'q')), val("tail"), null_col()};
        EXPECT_EQ(hash_streamed(h, two), hash_bytes(image_of(two))) << "len=" << len;
    }
}

TEST(RowImage, ValueExactlyTwoBuffersLong)
{
    RowHasher h;
    const std::vector<Col> row = {val(std::string(2 * 8192, 'm'))};
    EXPECT_EQ(hash_streamed(h, row), hash_bytes(image_of(row)));
}

// ---- the inline fast paths (short values, fixed-size values) ---------------

TEST(RowImage, EveryShortLengthMatchesHandBuilt)
{
    // add_value copies short values with overlapping fixed-size moves whose
    // cases change at 4, 8, 16, 32 and 64 bytes: every length up to 200, with
    // distinct bytes so a misplaced byte shows, alone and between neighbours.
    RowHasher h;
    for (std::size_t len = 0; len <= 200; ++len) {
        std::string v(len, '\0');
        for (std::size_t i = 0; i < len; ++i)
            v[i] = static_cast<char>(i * 31 + len);
        const std::vector<Col> one = {val(v)};
        EXPECT_EQ(hash_streamed(h, one), hash_bytes(image_of(one))) << "len=" << len;
        const std::vector<Col> three = {val("x"), val(v), null_col()};
        EXPECT_EQ(hash_streamed(h, three), hash_bytes(image_of(three))) << "len=" << len;
        if (len > 0) {
            std::string changed = v;
            changed[len - 1] = static_cast<char>(changed[len - 1] ^ 0x40);
            EXPECT_NE(hash_streamed(h, {val(changed)}), hash_streamed(h, one)) << "len=" << len;
        }
    }
}

TEST(RowImage, AddFixedIsAddValue)
{
    const std::uint64_t v8 = 0x0102030405060708ULL;
    const std::uint32_t v4 = 42;
    const std::uint16_t v2 = 0xBEEF;
    const unsigned char v1 = 0x7f;
    RowHasher a;
    a.begin_row(5);
    a.add_fixed<8>(&v8);
    a.add_fixed<4>(&v4);
    a.add_null();
    a.add_fixed<2>(&v2);
    a.add_fixed<1>(&v1);
    RowHasher b;
    b.begin_row(5);
    b.add_value(&v8, 8);
    b.add_value(&v4, 4);
    b.add_null();
    b.add_value(&v2, 2);
    b.add_value(&v1, 1);
    EXPECT_EQ(a.end_row(), b.end_row());
    // The int4 42 of the worked example (docs/row-image.md).
    RowHasher c;
    c.begin_row(1);
    c.add_fixed<4>(&v4);
    EXPECT_EQ(c.end_row(), hash_bytes(kInt4_42));
}

TEST(RowImage, FixedValuesAcrossTheBufferEdge)
{
    // add_fixed near the end of the buffer takes the spilling path: the same
    // hash as the image built by hand.
    for (std::size_t pad = 8160; pad <= 8192; ++pad) {
        const std::uint64_t v8 = 0x1122334455667788ULL ^ pad;
        RowHasher h;
        h.begin_row(3);
        const std::string filler(pad, 'f');
        h.add_value(filler.data(), filler.size());
        h.add_fixed<8>(&v8);
        h.add_null();
        const std::vector<Col> row = {val(filler), val(std::string(reinterpret_cast<const char*>(&v8), 8)), null_col()};
        EXPECT_EQ(h.end_row(), hash_bytes(image_of(row))) << "pad=" << pad;
    }
}

}  // namespace
