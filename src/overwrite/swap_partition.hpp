// swap_partition (api.md section 1): replace one partition by a fully built
// staging table, atomically, in the caller's transaction (docs/overwrite.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// UserError 42501 unless the caller owns (or is a member of the owner of)
// every relation given: what a swap needs, checked before any lock.
void check_ownership(pg::SpiSession& spi, const std::vector<std::uint32_t>& relations);

// UserError 0A000 when a foreign key references the partition (directly or
// through its partitioned table): a swap would replace rows it references
// unchecked; detaches: the swap detaches the partition (which would leave
// the references pointing outside the table), for the message. Rewrite mode
// keeps such references checked.
void check_not_referenced(pg::SpiSession& spi, const Partition& partition, bool detaches);

// The SQL function: returns the new partition (the staging table's OID).
std::uint32_t swap_partition(std::uint32_t partition, std::uint32_t staging, bool keep_old,
                             const std::optional<std::string>& lock_timeout, bool accept_losses);

// For overwrite_partition's mode 'swap', which has already found the
// partition, taken its unit lock and loaded the staging table. rows_are:
// how error messages name the rows ("the query", "staging table ...").
std::uint32_t swap_into(pg::SpiSession& spi, const Partition& partition, std::uint32_t staging, bool keep_old,
                        const std::optional<std::string>& lock_timeout, const std::string& rows_are);

}  // namespace pg_idempotent
