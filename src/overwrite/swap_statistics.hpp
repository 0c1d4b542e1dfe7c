// Extended statistics objects (CREATE STATISTICS) of the old partition,
// carried to the staging table by a swap (docs/overwrite.md, "Carried
// over"): each is built again on the staging table under a free name, with
// its statistics target, owner and comment, and takes the old name once the
// old partition is gone (or, with keep_old, its objects step aside).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// One statistics object of the old partition, as built on the staging table.
struct CarriedStatistics {
    std::string schema;        // the object's own schema (it may differ from the table's)
    std::string old_name;      // on the old partition (and later the new one)
    std::string staging_name;  // on the staging table until then
};

// Builds the old partition's statistics objects on the staging table; one
// the staging table already has (same columns or expressions and kinds) is
// used as it is. ANALYZE fills them, as it fills the table's own statistics.
std::vector<CarriedStatistics> carry_extended_statistics(pg::SpiSession& spi, const Partition& part,
                                                         const pg::Relation& staging);

// With keep_old, before the new ones take the old names: the kept table's
// statistics objects step aside under <name>__replaced_<n>.
void rename_kept_statistics(pg::SpiSession& spi, std::uint32_t kept_table);

// The carried objects take their old names (free once the old partition is
// dropped or its objects renamed).
void name_carried_statistics(pg::SpiSession& spi, const std::vector<CarriedStatistics>& carried);

}  // namespace pg_idempotent
