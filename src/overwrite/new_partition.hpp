// The partition overwrite_partition would need for a value no partition
// holds (docs/overwrite.md, "A day without a partition"): its bounds taken
// from the width of the neighbouring partitions, for a parent partitioned by
// RANGE on one date, timestamp or timestamptz column; the statement that
// creates it (shown in the error's HINT), and its creation in the caller's
// transaction (create_partition => true).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

struct NewPartition {
    std::string qualified;   // "schema"."<parent>_<yyyymmdd>"
    std::string bound;       // FOR VALUES FROM ('...') TO ('...'), canonical literals
    std::string create_sql;  // CREATE TABLE <qualified> PARTITION OF <parent> <bound>
    std::string lower;       // the bounds as canonical text
    std::string upper;
};

// The partition for value (key_param, of the key's type key_type) or, when
// none can be worked out, why not (partitioned otherwise, no neighbour to
// take the width from, too far from it).
struct PartitionProposal {
    std::optional<NewPartition> partition;
    std::string why_not;
};
PartitionProposal propose_partition(pg::SpiSession& spi, const pg::Relation& parent, std::uint32_t key_type,
                                    const pg::Param& key_param);

// Creates the proposed partition in the caller's transaction: a table LIKE
// the parent, then ATTACH PARTITION, which locks the parent SHARE UPDATE
// EXCLUSIVE (readers and writers of the other partitions go on; CREATE
// TABLE ... PARTITION OF would lock it ACCESS EXCLUSIVE until commit).
// Refused (23514) when the DEFAULT partition holds rows of the range, and
// (42501) unless the caller owns the parent.
void create_partition(pg::SpiSession& spi, const pg::Relation& parent, const std::string& key_column,
                      std::uint32_t key_type, const NewPartition& p);

}  // namespace pg_idempotent
