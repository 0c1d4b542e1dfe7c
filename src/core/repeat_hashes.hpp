// Which keys of a batch may repeat, found from their 64-bit hashes in one
// pass, so that merge and append group by key only the rows that need it.
//
// Exact grouping (GROUP BY key HAVING count(*) > 1) of a million-row batch is
// a hash aggregate that spills to temp files at the default work_mem and took
// a third of a merge's time (bench/README), though a batch usually repeats no
// key. Equal keys have equal hashes (the hash function is from the hash
// operator family of the key's equality), so a hash seen once is a key seen
// once: only the hashes seen again are candidates, and the exact grouping
// then reads only their rows. A hash collision makes a false candidate,
// never a missed repeat.
//
// Trivially destructible: its array comes from the caller's allocator (the
// aggregate's memory context) and is freed with it, also on an error. Past
// its memory budget or its candidate limit the finder gives up ("unknown"),
// and the caller groups every row as before.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pg_idempotent::core {

struct RepeatAllocator {
    void* (*allocate)(void* context, std::size_t bytes);  // never returns null
    void (*release)(void* context, void* memory);
    void* context;
};

class RepeatHashes {
public:
    // The finder's memory limit (the hashes, 8 bytes a row): 64 MB holds a
    // batch of 8 million rows; a larger batch is grouped exactly instead.
    static constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
    // More candidates than this: many keys repeat, and grouping them all is
    // the cheaper way.
    static constexpr std::size_t kMaxCandidates = 4096;

    void init(const RepeatAllocator& allocator);
    void add(std::uint64_t hash);
    // Sorts the hashes (once, core/hash_sort.hpp) and keeps the ones seen
    // more than once, each once. The hashes are collected and sorted rather
    // than looked up in a hash table as they come: a table of a million rows
    // misses the CPU's caches on every row.
    void finish();
    // Stops: the batch cannot be told (also for a reason of the caller's).
    void give_up();
    bool known() const { return known_; }
    std::size_t candidate_count() const { return candidate_count_; }
    const std::uint64_t* candidates() const { return hashes_; }  // after finish()

private:
    bool grow();

    RepeatAllocator allocator_{};
    std::uint64_t* hashes_ = nullptr;
    std::size_t count_ = 0;
    std::size_t capacity_ = 0;
    std::size_t candidate_count_ = 0;
    bool finished_ = false;
    bool known_ = true;
};

}  // namespace pg_idempotent::core
