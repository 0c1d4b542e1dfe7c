// The batch's values of a partitioned target's partition key, read before
// the statement and bound to it (core/partition_prune.hpp says why).
#pragma once

#include <optional>
#include <string>

#include "core/partition_prune.hpp"
#include "pg/catalog.hpp"
#include "pg/query_params.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// The column a partitioned target is partitioned on, when its partition key
// is one plain column; nullopt for any other target.
std::optional<pg::Column> single_partition_column(const pg::Relation& target);

// Reads the batch's distinct values of prune.column (the caller's params
// bound) and returns them as one parameter (an array of the column's type,
// `type`), or nullopt for an empty batch or more than 1,000 values (a
// backfill of years: planning the list would cost more than it saves).
std::optional<pg::Param> read_batch_values(pg::SpiSession& spi, const std::string& source_sql,
                                           const core::PartitionPrune& prune, std::uint32_t type,
                                           const pg::QueryParams& caller);

// Reads the batch's range of prune.column, widened by within, as the four
// parameters of a window prune; nullopt for an empty batch.
std::optional<pg::Params> read_batch_window(pg::SpiSession& spi, const std::string& source_sql,
                                            const core::PartitionPrune& prune, std::uint32_t type,
                                            const pg::QueryParams& caller, const std::string& within);

}  // namespace pg_idempotent
