// Sorts 64-bit hashes in place, ascending: a most-significant-byte radix
// sort (American flag sort: a counting pass and an in-place permutation per
// byte), the buckets it leaves small finished by insertion.
//
// Why not std::sort: hashes are uniform, so the first two bytes split a
// million of them into buckets of about 15, in passes that stream through
// the array; a comparison sort of a million hashes mispredicts a branch on
// most comparisons. bench/README.md has the measurement (append's batch
// statistics). Any input sorts correctly (equal or clustered hashes only
// take more passes, at most eight); no memory besides the array.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pg_idempotent::core {

void sort_hashes(std::uint64_t* hashes, std::size_t count) noexcept;

}  // namespace pg_idempotent::core
