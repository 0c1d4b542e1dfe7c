// core::sort_hashes: the same order as std::sort, for hashes spread as a
// hash function spreads them and for the inputs a radix sort handles worst
// (equal values, values that differ only in their low bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/hash_sort.hpp"

namespace {

using pg_idempotent::core::sort_hashes;

void expect_sorted_like_std(std::vector<std::uint64_t> v)
{
    std::vector<std::uint64_t> expected = v;
    std::sort(expected.begin(), expected.end());
    sort_hashes(v.data(), v.size());
    EXPECT_EQ(v, expected) << v.size() << " hashes";
}

TEST(HashSort, UniformHashesOfEverySize)
{
    std::mt19937_64 random(42);
    for (std::size_t n : {0, 1, 2, 47, 48, 49, 255, 256, 257, 4096, 100000, 1000000}) {
        std::vector<std::uint64_t> v(n);
        for (auto& h : v)
            h = random();
        expect_sorted_like_std(v);
    }
}

TEST(HashSort, EqualAndRepeatedHashes)
{
    expect_sorted_like_std(std::vector<std::uint64_t>(100000, 0x0123456789abcdefULL));
    expect_sorted_like_std(std::vector<std::uint64_t>(5000, 0));
    expect_sorted_like_std(std::vector<std::uint64_t>(5000, ~std::uint64_t{0}));
    std::mt19937_64 random(7);
    std::vector<std::uint64_t> v;
    for (int i = 0; i < 200000; ++i)
        v.push_back(random() % 1000 * 0x9e3779b97f4a7c15ULL);  // 1,000 values, each ~200 times
    expect_sorted_like_std(v);
}

TEST(HashSort, ValuesThatDifferOnlyInTheirLowBytes)
{
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 0; i < 70000; ++i)
        v.push_back((i * 7919) % 70001);  // small integers: the top six bytes all zero
    expect_sorted_like_std(v);
    v.clear();
    for (std::uint64_t i = 0; i < 70000; ++i)
        v.push_back(0xff00000000000000ULL | ((i * 31) & 0xffff));
    expect_sorted_like_std(v);
    std::reverse(v.begin(), v.end());
    expect_sorted_like_std(v);
}

TEST(HashSort, AlreadySortedAndDescending)
{
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 0; i < 300000; ++i)
        v.push_back(i * 0x100000001b3ULL);
    std::sort(v.begin(), v.end());
    expect_sorted_like_std(v);
    std::reverse(v.begin(), v.end());
    expect_sorted_like_std(v);
}

}  // namespace
