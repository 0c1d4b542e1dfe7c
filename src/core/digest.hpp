// The v1 checksum of a multiset of rows: pure C++, no PostgreSQL header.
//
// See docs/row-image.md for the format. In short: every row is encoded as its
// canonical image (row_image.hpp) and hashed with XXH3-128; the multiset digest
// is the sum of those 128-bit row hashes modulo 2^128 together with the row
// count. A sum is order-independent but, unlike XOR, does not let two copies of
// a row cancel out, so duplicating a row always changes the checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace pg_idempotent::core {

// A 128-bit hash, most significant half first.
struct Digest128 {
    std::uint64_t hi = 0;
    std::uint64_t lo = 0;

    friend bool operator==(const Digest128& a, const Digest128& b) noexcept { return a.hi == b.hi && a.lo == b.lo; }
    friend bool operator!=(const Digest128& a, const Digest128& b) noexcept { return !(a == b); }
};

// 32 lowercase hex digits, most significant first.
std::string to_hex(const Digest128& d);

// The 16 bytes of a digest, most significant first (the uuid form).
void to_bytes(const Digest128& d, unsigned char out[16]) noexcept;
// Its inverse: 16 bytes, most significant first (a uuid, an MD5 digest).
Digest128 from_bytes(const unsigned char in[16]) noexcept;

// Order-independent, duplicate-sensitive digest of a multiset of row hashes.
class MultisetDigest {
public:
    // Adds one row. noexcept: called from PostgreSQL's executor callbacks.
    // Inline: called once per row of every digest.
    void add(const Digest128& row) noexcept
    {
        // 128-bit addition with carry: the multiset sum modulo 2^128.
        const std::uint64_t lo = sum_.lo + row.lo;
        const std::uint64_t carry = lo < sum_.lo ? 1 : 0;
        sum_.lo = lo;
        sum_.hi += row.hi + carry;
        ++count_;
    }
    // Combines two partial digests (e.g. of two partitions, or of the parts
    // parallel workers read).
    void merge(const MultisetDigest& other) noexcept;
    // A digest from its two parts, as sum() and count() gave them (a partial
    // state sent from a parallel worker).
    static MultisetDigest from_parts(const Digest128& sum, std::uint64_t count) noexcept;

    std::uint64_t count() const noexcept { return count_; }
    Digest128 sum() const noexcept { return sum_; }

    // "v1:<row count>:<32 hex digits of the sum>".
    std::string text() const;

private:
    Digest128 sum_{};
    std::uint64_t count_ = 0;
};

// The row count a checksum text ("v1:<count>:<hex>") records; 0 for a text
// of another shape.
std::uint64_t digest_text_count(const std::string& text) noexcept;

// A row hash as a decimal number (0 to 2^128 - 1), and a decimal sum of row
// hashes (any size) back modulo 2^128: a digest's sum made by PostgreSQL's
// own sum(numeric), which Citus splits between the workers and the
// coordinator (checksum of a distributed table). nullopt for a text that is
// not a non-negative decimal integer.
std::string digest_decimal(const Digest128& value);
// The same into out (at least kDigestDecimalSize bytes), NUL-terminated,
// for a frame that must own nothing with a destructor.
inline constexpr std::size_t kDigestDecimalSize = 40;  // 39 digits and the NUL
void digest_decimal_to(const Digest128& value, char* out) noexcept;
std::optional<Digest128> digest_from_decimal(const std::string& decimal) noexcept;

// The prefix every checksum text starts with; bump it when the image changes.
inline constexpr const char* kChecksumFormat = "v1";

}  // namespace pg_idempotent::core
