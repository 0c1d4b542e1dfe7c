#include "core/repeat_hashes.hpp"

#include <cstring>

#include "core/hash_sort.hpp"

namespace pg_idempotent::core {

namespace {

constexpr std::size_t kInitialCapacity = 1024;

}  // namespace

void RepeatHashes::init(const RepeatAllocator& allocator)
{
    allocator_ = allocator;
    hashes_ =
        static_cast<std::uint64_t*>(allocator_.allocate(allocator_.context, kInitialCapacity * sizeof(std::uint64_t)));
    capacity_ = kInitialCapacity;
}

void RepeatHashes::add(std::uint64_t hash)
{
    if (!known_)
        return;
    if (count_ == capacity_ && !grow()) {
        give_up();
        return;
    }
    hashes_[count_++] = hash;
}

// Doubles the array, within the memory limit.
bool RepeatHashes::grow()
{
    const std::size_t bytes = capacity_ * 2 * sizeof(std::uint64_t);
    if (bytes > kMaxBytes)
        return false;
    auto* bigger = static_cast<std::uint64_t*>(allocator_.allocate(allocator_.context, bytes));
    std::memcpy(bigger, hashes_, count_ * sizeof(std::uint64_t));
    allocator_.release(allocator_.context, hashes_);
    hashes_ = bigger;
    capacity_ *= 2;
    return true;
}

void RepeatHashes::finish()
{
    if (!known_ || finished_)
        return;
    finished_ = true;
    sort_hashes(hashes_, count_);
    // The repeated hashes, each once, moved to the front of the array.
    std::size_t out = 0;
    for (std::size_t i = 1; i < count_; ++i) {
        if (hashes_[i] != hashes_[i - 1] || (out > 0 && hashes_[out - 1] == hashes_[i]))
            continue;
        if (out == kMaxCandidates) {
            give_up();
            return;
        }
        hashes_[out++] = hashes_[i];
    }
    candidate_count_ = out;
}

void RepeatHashes::give_up()
{
    if (!known_)
        return;  // once: its array is freed
    known_ = false;
    candidate_count_ = 0;
    allocator_.release(allocator_.context, hashes_);
    hashes_ = nullptr;
}

}  // namespace pg_idempotent::core
