// RowSampleBuilder / RowSample (src/core/row_sample.hpp): the sample of a
// multiset's row hashes that lets overwrite_partition's rerun stop reading a
// query at the first row that proves its rows changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/row_sample.hpp"
#include "random_digests.hpp"

namespace {

using pg_idempotent::core::Digest128;
using pg_idempotent::core::kRerunCheckModulus;
using pg_idempotent::core::RowSample;
using pg_idempotent::core::RowSampleBuilder;
using pg_idempotent::test::random_digests;

// Builders are 32 kB: on the heap, as the receiver keeps them.
std::unique_ptr<RowSampleBuilder> builder_of(const std::vector<Digest128>& rows, std::size_t from, std::size_t to)
{
    auto b = std::make_unique<RowSampleBuilder>();
    for (std::size_t i = from; i < to; ++i)
        b->add(rows[i]);
    return b;
}

RowSample sample_of(const std::vector<Digest128>& rows)
{
    auto parsed = RowSample::parse(builder_of(rows, 0, rows.size())->hex());
    EXPECT_TRUE(parsed.has_value());
    return parsed.value_or(RowSample::parse("0100000000000000").value());
}

TEST(RowSample, FewRowsKeepTheNarrowestBucketWhole)
{
    const auto rows = random_digests(1000, 1);
    const RowSample s = sample_of(rows);
    EXPECT_EQ(s.modulus(), kRerunCheckModulus);
    const auto in_bucket = [](const Digest128& r) { return (r.lo % kRerunCheckModulus) == 0; };
    EXPECT_EQ(s.size(), static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), in_bucket)));
    EXPECT_GT(s.size(), 30u);
    for (const auto& r : rows)
        EXPECT_FALSE(s.excludes(r));
    // Every other row in the bucket is absent; none outside it is excluded.
    for (const auto& r : random_digests(1000, 2))
        EXPECT_EQ(s.excludes(r), in_bucket(r)) << "lo " << r.lo;
}

TEST(RowSample, ManyRowsKeepABoundedSampleThatNeverExcludesOneOfThem)
{
    const auto rows = random_digests(1000000, 3);
    const RowSample s = sample_of(rows);
    EXPECT_GT(s.modulus(), 1u);
    EXPECT_LE(s.size(), RowSampleBuilder::kCapacity);
    EXPECT_GE(s.size(), RowSampleBuilder::kCapacity / 4);
    // Sound: no row of the multiset is ever excluded.
    for (const auto& r : rows)
        ASSERT_FALSE(s.excludes(r));
    // Other rows are excluded about once per modulus rows.
    const auto others = random_digests(200000, 4);
    const auto excluded =
        std::count_if(others.begin(), others.end(), [&](const Digest128& r) { return s.excludes(r); });
    const double expected = 200000.0 / static_cast<double>(s.modulus());
    EXPECT_GT(static_cast<double>(excluded), expected * 0.7);
    EXPECT_LT(static_cast<double>(excluded), expected * 1.3);
}

TEST(RowSample, SoundInAnyOrder)
{
    auto rows = random_digests(50000, 5);
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
    const Digest128 row{0x1234, 0x5670};
    const auto s = RowSample::parse(builder_of(std::vector<Digest128>(100000, row), 0, 100000)->hex());
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->modulus(), kRerunCheckModulus);
    EXPECT_EQ(s->size(), 1u);
    EXPECT_FALSE(s->excludes(row));
    EXPECT_TRUE(s->excludes(Digest128{0x1234, 0x5680}));
}

TEST(RowSample, RepeatsOfAFewRowsNeverHalveTheBucket)
{
    // Low halves in the first bucket only (bit 4 set): a halving before the
    // repeats are merged would drop them.
    const std::vector<Digest128> few{{1, 0x1010}, {2, 0x2030}, {3, 0x3050}};
    std::vector<Digest128> rows;
    for (int i = 0; i < 60000; ++i)
        rows.push_back(few[static_cast<std::size_t>(i) % few.size()]);
    const auto s = RowSample::parse(builder_of(rows, 0, rows.size())->hex());
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->modulus(), kRerunCheckModulus);
    EXPECT_EQ(s->size(), 3u);
    for (const auto& r : few)
        EXPECT_FALSE(s->excludes(r));
}

TEST(RowSample, EmptyMultisetExcludesEveryRow)
{
    const std::string empty = builder_of({}, 0, 0)->hex();
    EXPECT_EQ(empty, "1000000000000000");
    const auto s = RowSample::parse(empty);
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(s->excludes(Digest128{1, 0x20}));
    EXPECT_FALSE(s->excludes(Digest128{1, 0x21}));  // outside the bucket
}

TEST(RowSample, HexIsLittleEndianModulusThenAscendingEntries)
{
    const auto b = builder_of({Digest128{0, 0x0200000000000000}, Digest128{0, 0x10}, Digest128{0, 0x11}}, 0, 3);
    EXPECT_EQ(b->hex(),
              "1000000000000000"
              "1000000000000000"
              "0000000000000002");
}

// The entries a sample's hex holds, read here independently of parse.
std::vector<std::uint64_t> entries_of(const std::string& hex)
{
    std::vector<std::uint64_t> out;
    for (std::size_t at = 16; at + 16 <= hex.size(); at += 16) {
        std::uint64_t v = 0;
        for (int byte = 0; byte < 8; ++byte)
            v |= std::stoull(hex.substr(at + 2 * static_cast<std::size_t>(byte), 2), nullptr, 16) << (8 * byte);
        out.push_back(v);
    }
    return out;
}

std::string hex_of(std::uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (int byte = 0; byte < 8; ++byte) {
        const unsigned b = (v >> (8 * byte)) & 0xffu;
        out += digits[b >> 4];
        out += digits[b & 0xfu];
    }
    return out;
}

// holds searches the range of entries that the probe's top bits index: it
// must answer as a search of the whole sample does, for entries spread
// evenly (a builder's), bunched in one range, or few; and parse's at_least
// keeps exactly the entries in the narrower bucket.
void expect_excludes_as_a_full_search(const std::string& hex, const std::vector<std::uint64_t>& probes,
                                      std::uint64_t at_least = 1)
{
    const auto s = RowSample::parse(hex, at_least);
    ASSERT_TRUE(s.has_value());
    const std::vector<std::uint64_t> entries = entries_of(hex);
    const std::uint64_t mask = s->modulus() - 1;
    for (std::uint64_t lo : probes) {
        const bool expected = (lo & mask) == 0 && !std::binary_search(entries.begin(), entries.end(), lo);
        ASSERT_EQ(s->excludes(Digest128{7, lo}), expected) << "lo " << lo;
    }
}

std::vector<std::uint64_t> probes_around(const std::vector<std::uint64_t>& entries, std::uint64_t mask)
{
    std::vector<std::uint64_t> probes = {0, ~mask, mask + 1};
    for (std::uint64_t e : entries)
        for (std::uint64_t p : {e, e - (mask + 1), e + (mask + 1), e + 1})
            probes.push_back(p);
    for (const Digest128& d : random_digests(20000, 11))
        probes.push_back(d.lo & ~mask);
    return probes;
}

TEST(RowSample, ExcludesAsAFullSearchWhereverTheEntriesLie)
{
    // A builder's: 4,096 or fewer hashes, spread evenly.
    const std::string even = builder_of(random_digests(100000, 5), 0, 100000)->hex();
    const auto parsed = RowSample::parse(even);
    ASSERT_TRUE(parsed.has_value());
    expect_excludes_as_a_full_search(even, probes_around(entries_of(even), parsed->modulus() - 1));
    // Bunched: 3,000 small values and a few huge ones (modulus 1).
    std::vector<std::uint64_t> bunched;
    for (std::uint64_t v = 1; v <= 3000; ++v)
        bunched.push_back(v * 3);
    for (std::uint64_t v : {std::uint64_t{1} << 62, std::uint64_t{1} << 63, ~std::uint64_t{0}})
        bunched.push_back(v);
    std::string hex = "0100000000000000";
    for (std::uint64_t v : bunched)
        hex += hex_of(v);
    expect_excludes_as_a_full_search(hex, probes_around(bunched, 0));
    // One entry, and none.
    expect_excludes_as_a_full_search("0100000000000000" + hex_of(42), probes_around({42}, 0));
    expect_excludes_as_a_full_search("0100000000000000", probes_around({}, 0));
}

TEST(RowSample, ANarrowerBucketKeepsItsEntriesAndStaysSound)
{
    // A sample of 10,000 rows in the bucket of modulus 4 (2,500 entries or
    // so), as builders wrote before kRerunCheckModulus.
    const auto rows = random_digests(10000, 21);
    std::vector<std::uint64_t> fine;
    for (const auto& r : rows)
        if ((r.lo & 3u) == 0)
            fine.push_back(r.lo);
    std::sort(fine.begin(), fine.end());
    fine.erase(std::unique(fine.begin(), fine.end()), fine.end());
    std::string hex = "0400000000000000";
    for (std::uint64_t e : fine)
        hex += hex_of(e);
    const auto whole = RowSample::parse(hex);
    const auto narrow = RowSample::parse(hex, 16);
    ASSERT_TRUE(whole.has_value());
    ASSERT_TRUE(narrow.has_value());
    ASSERT_LT(whole->modulus(), 16u);
    EXPECT_EQ(narrow->modulus(), 16u);
    const std::vector<std::uint64_t> entries = entries_of(hex);
    EXPECT_EQ(narrow->size(), static_cast<std::size_t>(std::count_if(entries.begin(), entries.end(),
                                                                     [](std::uint64_t e) { return (e & 15u) == 0; })));
    for (const auto& r : rows)
        ASSERT_FALSE(narrow->excludes(r));
    expect_excludes_as_a_full_search(hex, probes_around(entries, 0), 16);
    // Other rows: excluded when in the narrower bucket, never outside it.
    std::size_t excluded = 0;
    for (const auto& r : random_digests(10000, 22)) {
        ASSERT_EQ(narrow->excludes(r), (r.lo & 15u) == 0) << "lo " << r.lo;
        excluded += narrow->excludes(r) ? 1 : 0;
    }
    EXPECT_GT(excluded, 400u);
    // A modulus already wider than at_least is kept as it is.
    const std::string wide = builder_of(random_digests(1000000, 23), 0, 1000000)->hex();
    EXPECT_EQ(RowSample::parse(wide, 16)->modulus(), RowSample::parse(wide)->modulus());
    EXPECT_EQ(RowSample::parse(wide, 16)->size(), RowSample::parse(wide)->size());
    // at_least must be a power of two up to 256.
    for (std::uint64_t bad : {0u, 3u, 512u})
        EXPECT_FALSE(RowSample::parse(hex, bad).has_value()) << bad;
}

TEST(RowSample, ParseReadsEitherCaseOfHex)
{
    const auto lower = RowSample::parse(
        "0100000000000000"
        "abcdef0123456789");
    const auto upper = RowSample::parse(
        "0100000000000000"
        "ABCDEF0123456789");
    ASSERT_TRUE(lower.has_value());
    ASSERT_TRUE(upper.has_value());
    EXPECT_FALSE(lower->excludes(Digest128{0, 0x8967452301efcdab}));
    EXPECT_FALSE(upper->excludes(Digest128{0, 0x8967452301efcdab}));
    EXPECT_TRUE(upper->excludes(Digest128{0, 0x8967452301efcdac}));
}

TEST(RowSample, ParseRefusesWhatTheBuilderNeverWrites)
{
    EXPECT_FALSE(RowSample::parse("").has_value());
    EXPECT_FALSE(RowSample::parse("01000000000000").has_value());    // short
    EXPECT_FALSE(RowSample::parse("0300000000000000").has_value());  // modulus 3
    EXPECT_FALSE(RowSample::parse("010000000000000g").has_value());  // not hex
    EXPECT_FALSE(RowSample::parse("0100000000000000"
                                  "0200000000000000"
                                  "0100000000000000")
                     .has_value());  // not ascending
    EXPECT_FALSE(RowSample::parse("0100000000000000"
                                  "0100000000000000"
                                  "0100000000000000")
                     .has_value());  // repeated
    EXPECT_FALSE(RowSample::parse("0200000000000000"
                                  "0100000000000000")
                     .has_value());  // 1 is not in bucket 2
    const auto ok = RowSample::parse(
        "0200000000000000"
        "0200000000000000");
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->modulus(), 2u);
    EXPECT_FALSE(ok->excludes(Digest128{9, 2}));
    EXPECT_TRUE(ok->excludes(Digest128{9, 4}));
    EXPECT_FALSE(ok->excludes(Digest128{9, 3}));  // not in the bucket: says nothing
}

// Parallel workers each sample their share; the leader merges the partial
// samples. The merged sample is sound for the union, whatever the split.
TEST(RowSample, MergedSamplesAreSoundForTheUnion)
{
    const auto rows = random_digests(300000, 7);
    for (std::size_t cut : {std::size_t{0}, std::size_t{1000}, std::size_t{150000}, std::size_t{299000}}) {
        auto a = builder_of(rows, 0, cut);
        auto b = builder_of(rows, cut, rows.size());
        a->merge(*b);
        const auto s = RowSample::parse(a->hex());
        ASSERT_TRUE(s.has_value());
        EXPECT_LE(s->size(), RowSampleBuilder::kCapacity);
        EXPECT_GE(s->size(), RowSampleBuilder::kCapacity / 4);
        for (const auto& r : rows)
            ASSERT_FALSE(s->excludes(r)) << "cut at " << cut;
        // Still a sample: most other rows are not in the bucket.
        const auto others = random_digests(10000, 8);
        EXPECT_LT(std::count_if(others.begin(), others.end(), [&](const Digest128& r) { return s->excludes(r); }),
                  1000);
    }
}

TEST(RowSample, SerializedStatesRoundTrip)
{
    const auto rows = random_digests(50000, 9);
    const auto a = builder_of(rows, 0, rows.size());
    std::vector<unsigned char> bytes(a->serialized_size());
    a->serialize(bytes.data());
    auto b = std::make_unique<RowSampleBuilder>();
    ASSERT_TRUE(b->deserialize(bytes.data(), bytes.size()));
    EXPECT_EQ(b->hex(), a->hex());
    // And it goes on sampling from there, as the original would.
    const auto more = random_digests(20000, 10);
    auto c = builder_of(rows, 0, rows.size());
    for (const auto& r : more) {
        b->add(r);
        c->add(r);
    }
    EXPECT_EQ(b->hex(), c->hex());
}

TEST(RowSample, DeserializeRefusesMalformedStates)
{
    auto b = std::make_unique<RowSampleBuilder>();
    const unsigned char modulus3[8] = {3, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_FALSE(b->deserialize(modulus3, 8));
    const unsigned char short_state[7] = {1, 0, 0, 0, 0, 0, 0};
    EXPECT_FALSE(b->deserialize(short_state, 7));
    // Modulus 2, entry 1: not in the bucket.
    const unsigned char outside[16] = {2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_FALSE(b->deserialize(outside, 16));
    std::vector<unsigned char> too_many(8 * (RowSampleBuilder::kCapacity + 2), 0);
    too_many[0] = 1;
    EXPECT_FALSE(b->deserialize(too_many.data(), too_many.size()));
    EXPECT_EQ(b->hex(), "0100000000000000");  // left empty
    too_many.resize(8 * (RowSampleBuilder::kCapacity + 1));
    EXPECT_TRUE(b->deserialize(too_many.data(), too_many.size()));  // 4096 zero entries
}

}  // namespace
