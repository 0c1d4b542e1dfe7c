// RowSampleBuilder / RowSample (src/core/row_sample.hpp): the sample of a
// multiset's row hashes that lets overwrite_partition's rerun stop reading a
// query at the first row that proves its rows changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/row_sample.hpp"

namespace {

using pg_idempotent::core::Digest128;
using pg_idempotent::core::RowSample;
using pg_idempotent::core::RowSampleBuilder;

std::vector<Digest128> random_rows(std::size_t n, std::uint32_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<Digest128> out(n);
    for (Digest128& d : out)
        d = Digest128{rng(), rng()};
    return out;
}

RowSample sample_of(const std::vector<Digest128>& rows)
{
    RowSampleBuilder b;
    for (const Digest128& r : rows)
        b.add(r);
    auto parsed = RowSample::parse(b.hex());
    EXPECT_TRUE(parsed.has_value());
    return parsed.value_or(RowSample::parse("0100000000000000").value());
}

TEST(RowSample, FewRowsAreAllKept)
{
    const auto rows = random_rows(1000, 1);
    const RowSample s = sample_of(rows);
    EXPECT_EQ(s.modulus(), 1u);
    EXPECT_EQ(s.size(), 1000u);
    for (const auto& r : rows)
        EXPECT_FALSE(s.excludes(r));
    // With modulus 1 every other row is in the bucket and absent.
    for (const auto& r : random_rows(1000, 2))
        EXPECT_TRUE(s.excludes(r));
}

TEST(RowSample, ManyRowsKeepABoundedSampleThatNeverExcludesOneOfThem)
{
    const auto rows = random_rows(1000000, 3);
    const RowSample s = sample_of(rows);
    EXPECT_GT(s.modulus(), 1u);
    EXPECT_LE(s.size(), RowSampleBuilder::kCapacity);
    EXPECT_GE(s.size(), RowSampleBuilder::kCapacity / 4);
    // Sound: no row of the multiset is ever excluded.
    for (const auto& r : rows)
        ASSERT_FALSE(s.excludes(r));
    // Other rows are excluded about once per modulus rows.
    const auto others = random_rows(200000, 4);
    const auto excluded = std::count_if(others.begin(), others.end(), [&](const Digest128& r) { return s.excludes(r); });
    const double expected = 200000.0 / static_cast<double>(s.modulus());
    EXPECT_GT(static_cast<double>(excluded), expected * 0.7);
    EXPECT_LT(static_cast<double>(excluded), expected * 1.3);
}

TEST(RowSample, SoundInAnyOrder)
{
    auto rows = random_rows(50000, 5);
    // Repeats, clustered, so that the sample fills at other moments.
    for (std::size_t i = 0; i < 20000; ++i)
        rows.push_back(rows[i % 7]);
    std::mt19937 rng(6);
    for (int shuffle = 0; shuffle < 3; ++shuffle) {
        std::shuffle(rows.begin(), rows.end(), rng);
        const RowSample s = sample_of(rows);
        for (const auto& r : rows)
            ASSERT_FALSE(s.excludes(r));
    }
}

TEST(RowSample, RepeatedRowsTakeOneEntry)
{
    const Digest128 row{0x1234, 0x5678};
    RowSampleBuilder b;
    for (int i = 0; i < 100000; ++i)
        b.add(row);
    const auto s = RowSample::parse(b.hex());
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->modulus(), 1u);
    EXPECT_EQ(s->size(), 1u);
    EXPECT_FALSE(s->excludes(row));
    EXPECT_TRUE(s->excludes(Digest128{0x1234, 0x5679}));
}

TEST(RowSample, EmptyMultisetExcludesEveryRow)
{
    RowSampleBuilder b;
    EXPECT_EQ(b.hex(), "0100000000000000");
    const auto s = RowSample::parse(b.hex());
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(s->excludes(Digest128{1, 2}));
}

TEST(RowSample, HexIsLittleEndianModulusThenAscendingEntries)
{
    RowSampleBuilder b;
    b.add(Digest128{0, 0x0200000000000000});
    b.add(Digest128{0, 0x01});
    EXPECT_EQ(b.hex(), "0100000000000000" "0100000000000000" "0000000000000002");
}

TEST(RowSample, ParseRefusesWhatTheBuilderNeverWrites)
{
    EXPECT_FALSE(RowSample::parse("").has_value());
    EXPECT_FALSE(RowSample::parse("01000000000000").has_value());                     // short
    EXPECT_FALSE(RowSample::parse("0300000000000000").has_value());                   // modulus 3
    EXPECT_FALSE(RowSample::parse("010000000000000g").has_value());                   // not hex
    EXPECT_FALSE(RowSample::parse("0100000000000000" "0200000000000000" "0100000000000000")
                     .has_value());  // not ascending
    EXPECT_FALSE(RowSample::parse("0100000000000000" "0100000000000000" "0100000000000000")
                     .has_value());  // repeated
    EXPECT_FALSE(RowSample::parse("0200000000000000" "0100000000000000").has_value());  // 1 is not in bucket 2
    const auto ok = RowSample::parse("0200000000000000" "0200000000000000");
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->modulus(), 2u);
    EXPECT_FALSE(ok->excludes(Digest128{9, 2}));
    EXPECT_TRUE(ok->excludes(Digest128{9, 4}));
    EXPECT_FALSE(ok->excludes(Digest128{9, 3}));  // not in the bucket: says nothing
}

}  // namespace
