// core::RepeatHashes: the key hashes seen more than once, each once; unknown
// past the candidate limit or the memory limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/repeat_hashes.hpp"

namespace {

using pg_idempotent::core::RepeatAllocator;
using pg_idempotent::core::RepeatHashes;

void* allocate(void*, std::size_t bytes)
{
    return std::malloc(bytes);
}
void release(void*, void* memory)
{
    std::free(memory);
}

// The finder's result for these hashes: the sorted candidates, or nothing
// when unknown.
std::vector<std::uint64_t> repeats_of(const std::vector<std::uint64_t>& hashes, bool* known = nullptr)
{
    RepeatHashes r;
    r.init(RepeatAllocator{allocate, release, nullptr});
    for (auto h : hashes)
        r.add(h);
    r.finish();
    if (known != nullptr)
        *known = r.known();
    std::vector<std::uint64_t> out(r.candidates(), r.candidates() + r.candidate_count());
    if (r.known())
        release(nullptr, const_cast<std::uint64_t*>(r.candidates()));
    return out;
}

TEST(RepeatHashes, NoRepeatNoCandidate)
{
    std::vector<std::uint64_t> hashes;
    for (std::uint64_t i = 0; i < 100000; ++i)
        hashes.push_back(i * 0x9e3779b97f4a7c15ULL);
    bool known = false;
    EXPECT_TRUE(repeats_of(hashes, &known).empty());
    EXPECT_TRUE(known);
    EXPECT_TRUE(repeats_of({}, &known).empty());
    EXPECT_TRUE(known);
}

TEST(RepeatHashes, EachRepeatedHashOnceWhateverItsCount)
{
    std::vector<std::uint64_t> hashes = {7, 3, 0, 7, 9, 0, 7, 5, 5, 5, 5, 1};
    EXPECT_EQ(repeats_of(hashes), (std::vector<std::uint64_t>{0, 5, 7}));
    // Many rows, the repeats spread over them (the array grows past its first size).
    hashes.clear();
    for (std::uint64_t i = 0; i < 50000; ++i)
        hashes.push_back(i);
    hashes.push_back(49999);
    hashes.push_back(12345);
    hashes.push_back(12345);
    std::reverse(hashes.begin(), hashes.end());
    EXPECT_EQ(repeats_of(hashes), (std::vector<std::uint64_t>{12345, 49999}));
}

TEST(RepeatHashes, UnknownPastTheCandidateLimit)
{
    std::vector<std::uint64_t> hashes;
    for (std::uint64_t i = 0; i < RepeatHashes::kMaxCandidates; ++i) {
        hashes.push_back(i);
        hashes.push_back(i);
    }
    bool known = false;
    EXPECT_EQ(repeats_of(hashes, &known).size(), RepeatHashes::kMaxCandidates);
    EXPECT_TRUE(known);
    hashes.push_back(RepeatHashes::kMaxCandidates);
    hashes.push_back(RepeatHashes::kMaxCandidates);
    EXPECT_TRUE(repeats_of(hashes, &known).empty());
    EXPECT_FALSE(known);
}

// 64 MB of hashes: 8,388,608 rows are known, one more is not.
TEST(RepeatHashes, UnknownPastTheMemoryLimit)
{
    const std::size_t rows = RepeatHashes::kMaxBytes / sizeof(std::uint64_t);
    RepeatHashes r;
    r.init(RepeatAllocator{allocate, release, nullptr});
    for (std::size_t i = 0; i < rows; ++i)
        r.add(i);
    EXPECT_TRUE(r.known());
    r.add(0);  // a repeat, but past the limit: unknown, not "no repeat"
    r.finish();
    EXPECT_FALSE(r.known());
    EXPECT_EQ(r.candidate_count(), 0u);
}

// The caller may give up too (a key it cannot hash), once or more.
TEST(RepeatHashes, TheCallerCanGiveUp)
{
    RepeatHashes r;
    r.init(RepeatAllocator{allocate, release, nullptr});
    r.add(1);
    r.add(1);
    r.give_up();
    r.give_up();
    r.add(2);
    r.finish();
    EXPECT_FALSE(r.known());
    EXPECT_EQ(r.candidate_count(), 0u);
}

}  // namespace
