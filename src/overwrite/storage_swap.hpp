// overwrite_partition's mode 'swap' without detaching anything: the rows are
// loaded into a staging table laid out exactly as the partition is, checked
// against every constraint of the partition, and the staging table's
// storage becomes the partition's (pg/relation_storage.hpp), as VACUUM FULL
// puts a rewritten heap in place. The partition keeps its OID, its name, its
// indexes (rebuilt from the new rows), constraints, triggers, grants,
// policies, statistics objects, publication memberships and its bound; only
// the partition is locked, so a table of 1,000 partitions costs what one of
// 10 does and readers and writers of other partitions never wait.
//
// keep_old (the old partition kept as a table of its own) is the one swap
// that must detach: it goes through swap_partition (swap_partition.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// An empty table in the partition's schema and tablespace, with the
// partition's persistence and its columns attnum for attnum: each live
// column with its name, type, collation, NOT NULL, generation expression,
// storage and compression, and a dropped column where the partition has
// one. No default (the load names every column that is not generated), no
// index and no other constraint (checked before the swap, rebuilt by it).
// Returns its OID.
std::uint32_t create_storage_staging(pg::SpiSession& spi, const Partition& part, const std::string& qualified,
                                     const std::string& tablespace_clause);

// The loaded staging table's rows checked against the partition's bound,
// CHECK constraints and foreign keys (each 23514 or 23503 naming the
// constraint, nothing changed), then swapped in under the partition's
// ACCESS EXCLUSIVE lock (waited for at most lock_timeout: 55P03); the
// partition's unique and exclusion constraints are checked as its indexes
// are rebuilt. The staging table is gone afterwards. rows_are: how messages
// name the rows ("the query").
void swap_storage_into(pg::SpiSession& spi, const Partition& part, std::uint32_t staging,
                       const std::optional<std::string>& lock_timeout, const std::string& rows_are);

}  // namespace pg_idempotent
