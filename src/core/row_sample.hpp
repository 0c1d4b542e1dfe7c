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
#include <optional>
#include <string>
#include <vector>

#include "core/digest.hpp"

namespace pg_idempotent::core {

// The narrowest bucket a sample holds and a rerun tests its rows against:
// one row in 16. A finer one (a rerun of fewer than about 64k rows) cost an
// identical rerun more, to store, read and search, than it saved a changed
// rerun by stopping a few rows sooner.
constexpr std::uint64_t kRerunCheckModulus = 16;

// Collects the sample of the rows it is given. It starts with the bucket of
// modulus kRerunCheckModulus and doubles the modulus whenever the sample is
// full, dropping the entries that leave the bucket, so it holds at most
// kCapacity entries (32 kB), stored inline: it allocates nothing, and it can
// live in memory PostgreSQL owns (an aggregate's state) without a destructor
// to run. For n rows (n > 16 kCapacity) it ends with between kCapacity / 4
// and kCapacity entries.
class RowSampleBuilder {
public:
    static constexpr std::size_t kCapacity = 4096;

    void add(const Digest128& row) noexcept { add_entry(row.lo); }
    // The sample of both multisets (parallel workers' shares): the larger
    // modulus, and the entries of both in its bucket.
    void merge(const RowSampleBuilder& other) noexcept;

    // The modulus, then the entries, 8 bytes each, little-endian: the
    // entries as held (hex() sorts them), for a partial state sent between
    // processes.
    std::size_t serialized_size() const noexcept { return 8 * (size_ + 1); }
    void serialize(unsigned char* out) const noexcept;
    // Replaces this sample by a serialized one; false (and this sample left
    // empty) unless it is well formed: a power-of-two modulus, at most
    // kCapacity entries, each in the bucket.
    bool deserialize(const unsigned char* in, std::size_t length) noexcept;

    // Hex of: the modulus, then the entries, ascending and distinct; 8 bytes
    // each, little-endian. RowSample::parse reads it back.
    std::string hex() const;
    // The same without allocating: out has room for hex_capacity() chars
    // (the text, then a NUL), scratch for size() entries. Returns the length.
    std::size_t hex_capacity() const noexcept { return 16 * (size_ + 1) + 1; }
    std::size_t size() const noexcept { return size_; }
    std::size_t hex_into(char* out, std::uint64_t* scratch) const noexcept;

private:
    void add_entry(std::uint64_t entry) noexcept;
    void make_room() noexcept;    // dedupes, then doubles the modulus if still full
    void keep_bucket() noexcept;  // drops the entries outside the bucket

    std::uint64_t mask_ = kRerunCheckModulus - 1;  // modulus - 1
    std::size_t size_ = 0;
    std::uint64_t entries_[kCapacity];
};

// A sample read back, to test rows against.
class RowSample {
public:
    // nullopt unless text is what RowSampleBuilder::hex() writes (a power-of-
    // two modulus, then ascending distinct entries, each in the bucket).
    //
    // at_least (a power of two up to 256) narrows the bucket: the sample read
    // keeps only the entries in the bucket of modulus max(the text's,
    // at_least), a sample of the same multiset, as sound, and cheaper to read
    // and to test against; entries outside it are skipped unread beyond
    // their low byte (a sample written before kRerunCheckModulus, or by
    // hand).
    static std::optional<RowSample> parse(const std::string& hex, std::uint64_t at_least = 1);

    std::uint64_t modulus() const noexcept { return mask_ + 1; }
    std::size_t size() const noexcept { return entries_.size(); }

    // Whether row cannot be a row of the sampled multiset: it is in the
    // bucket and its hash is not in the sample. Inline: it runs for every
    // row a rerun reads, and all but one row in `modulus` leave at the mask.
    bool excludes(const Digest128& row) const noexcept { return (row.lo & mask_) == 0 && !holds(row.lo); }

private:
    RowSample() = default;  // parse makes one, with its index
    bool holds(std::uint64_t lo) const noexcept;
    void index_entries();
    std::vector<std::uint64_t> entries_;  // ascending
    std::uint64_t mask_ = 0;
    // Where each range of the top bits of a hash starts among the entries:
    // starts_[k] is the first entry whose top bits (e >> shift_) are k or
    // more. About one entry per range, so holds reads one or two.
    std::vector<std::uint32_t> starts_;
    unsigned shift_ = 63;
};

}  // namespace pg_idempotent::core
