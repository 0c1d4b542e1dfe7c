// A sample of the row hashes of a multiset of rows, chosen by content, so
// that a later pass over rows can learn early that they are not that
// multiset: overwrite_partition's rerun stops reading the query at the first
// row that proves it changed (docs/overwrite.md).
//
// A row belongs to the sample's bucket when the low bits of its hash (the lo
// half) are zero under the sample's modulus, a power of two; the sample keeps
// the lo half of the hash of every row in the bucket. Whether a row is in the
// bucket depends on that row alone, not on the order rows come in nor on the
// other rows. So a row in the bucket whose hash is not in the sample is not a
// row of the multiset, and the multisets differ. The converse does not hold:
// the sample can only say "differs", never "same" (the whole digest does
// that), and a hash it holds by chance only means reading on.
//
// Pure C++; the members that run per row are noexcept and do not allocate
// (they run in PostgreSQL's executor callbacks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/digest.hpp"

namespace pg_idempotent::core {

// Collects the sample of the rows it is given. It starts with every row in
// the bucket (modulus 1) and doubles the modulus whenever the sample is full,
// dropping the entries that leave the bucket, so it holds at most kCapacity
// entries (32 kB) in memory allocated once, up front. For n rows (n >
// kCapacity) it ends with between kCapacity / 4 and kCapacity entries.
class RowSampleBuilder {
public:
    static constexpr std::size_t kCapacity = 4096;

    RowSampleBuilder();  // allocates: call outside the executor's callbacks
    void add(const Digest128& row) noexcept;
    // Hex of: the modulus, then the entries, ascending and distinct; 8 bytes
    // each, little-endian. RowSample::parse reads it back.
    std::string hex() const;

private:
    void make_room() noexcept;  // dedupes, then doubles the modulus if still full

    std::unique_ptr<std::uint64_t[]> entries_;
    std::size_t size_ = 0;
    std::uint64_t mask_ = 0;  // modulus - 1
};

// A sample read back, to test rows against.
class RowSample {
public:
    // nullopt unless text is what RowSampleBuilder::hex() writes (a power-of-
    // two modulus, then ascending distinct entries, each in the bucket).
    static std::optional<RowSample> parse(const std::string& hex);

    std::uint64_t modulus() const noexcept { return mask_ + 1; }
    std::size_t size() const noexcept { return entries_.size(); }

    // Whether row cannot be a row of the sampled multiset: it is in the
    // bucket and its hash is not in the sample.
    bool excludes(const Digest128& row) const noexcept;

private:
    std::vector<std::uint64_t> entries_;  // ascending
    std::uint64_t mask_ = 0;
};

}  // namespace pg_idempotent::core
