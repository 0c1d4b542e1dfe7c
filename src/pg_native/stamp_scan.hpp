// Counts a table's rows and those that carry one stamp (xmin, cmin), for
// the record of what overwrite_partition wrote (src/written_units.hpp).
//
// A plain heap scan that reads each visible row's header, not its values:
// what `SELECT count(*), count(*) FILTER (WHERE xmin = .. AND cmin = ..)`
// computes, without a slot or an expression per row, and without pruning
// the pages it reads (so it writes no WAL: see stamp_scan.cpp).
#pragma once

#include <cstdint>
#include <optional>

namespace pg_idempotent::pg {

struct StampCount {
    std::uint64_t rows = 0;     // visible to the transaction's snapshot
    std::uint64_t stamped = 0;  // of those, inserted by xmin in command cmin
};

// Under the snapshot a new statement of the caller would take. nullopt when
// the table is not a heap, or when row security applies to the caller (it
// would see fewer rows than the scan counts): the caller then hashes. The
// caller has checked SELECT on the table.
std::optional<StampCount> count_stamped_rows(std::uint32_t relation, std::uint32_t xmin, std::uint32_t cmin);

}  // namespace pg_idempotent::pg
