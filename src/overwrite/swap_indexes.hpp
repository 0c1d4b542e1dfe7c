// What a swap carries from the old partition to the staging table beyond the
// parent's own objects: the partition's own indexes and constraints (not
// attached to a parent index), the tablespace of every index, and the
// columns' statistics settings (docs/overwrite.md, "Carried over").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// One of the old partition's own indexes, as built on the staging table: it
// takes the old name once the old partition is dropped or renamed.
struct LocalIndex {
    std::string old_name;      // on the old partition (and later the new one)
    std::string staging_name;  // on the staging table until then
};

// The old partition's own indexes and PRIMARY KEY / UNIQUE / EXCLUDE
// constraints, built on the staging table (before the parent lock, so
// their build time is not spent under it) in the old index's tablespace.
// One the staging table already has (the same definition) is used as it
// is, moved to that tablespace if it is elsewhere.
std::vector<LocalIndex> carry_local_indexes(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging);

// The old partition's own index names (its indexes attached to no parent
// index), for keep_old, which renames them out of the way.
std::vector<std::string> local_index_names(pg::SpiSession& spi, std::uint32_t partition);

// The tablespace ("" = the database's default) of the old partition's index
// attached to each parent index, by the parent index's OID (as text).
std::map<std::string, std::string> attached_index_tablespaces(pg::SpiSession& spi, std::uint32_t partition);

// Relations (tables, indexes) and extended statistics objects each have
// names of their own in a schema.
enum class NameSpace { kRelations, kStatistics };

// <name><stem><n> (stem "__replaced_", "__swap_") with the first n whose
// name no object of schema has in that name space.
std::string free_name(pg::SpiSession& spi, const std::string& schema, const std::string& name, const std::string& stem,
                      NameSpace in = NameSpace::kRelations);

// Runs fn with default_tablespace set to tablespace, so that the index an
// ALTER TABLE ... ADD CONSTRAINT or a CREATE INDEX without a TABLESPACE
// clause builds goes there (as pg_dump restores indexes).
void in_tablespace(const std::string& tablespace, const std::function<void()>& fn);

// Moves an index of the staging table to tablespace unless it is there.
void move_index_to(pg::SpiSession& spi, const std::string& qualified_index, const std::string& current,
                   const std::string& tablespace);

// Per-column statistics targets (ALTER COLUMN ... SET STATISTICS) and
// options (n_distinct, n_distinct_inherited) of the old partition.
void carry_column_statistics(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging);

}  // namespace pg_idempotent
