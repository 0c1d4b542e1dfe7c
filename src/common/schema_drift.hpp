// The source columns a target lacks (docs/merge.md, "Staging columns and
// schema drift"). exclude_columns may name a column of either side: one only
// the source has is left out of the batch (a staging table's _loaded_at),
// one only the target has is left alone. Any other source column the target
// lacks is schema drift, and on_schema_change (dbt's names) says what
// becomes of it: 'fail' (the default), 'ignore' (left out of the batch) or
// 'append_new_columns' (added to the target in the caller's transaction).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/batch_source.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

enum class OnSchemaChange { kFail, kIgnore, kAppendNewColumns };

// 22023 unless text is 'fail', 'ignore' or 'append_new_columns'.
OnSchemaChange on_schema_change_of(const std::string& text);

// What a family says of a drifted column, for its messages.
struct DriftRules {
    std::string function;              // "idem.merge"
    std::string written;               // DETAIL: "Every source column is written"
    std::optional<std::string> reads;  // a source column the function reads itself (merge's delete flag)
};

// Leaves out of the batch the columns of exclude_columns that only the
// source has (42703 for a name neither side has), then the drifted columns
// under 'ignore'. Under 'fail' a drifted column is 42703 naming them all,
// with a HINT that names exclude_columns and on_schema_change. Returns the
// columns to add to the target under 'append_new_columns' (none otherwise).
std::vector<pg::Column> settle_source_columns(SourceShape& src, const pg::Relation& target,
                                              const std::optional<std::vector<std::string>>& excluded,
                                              OnSchemaChange mode, const DriftRules& rules);

// ALTER TABLE target ADD COLUMN for each column, of the source's type and
// collation, NULL in the existing rows; in the caller's transaction, after
// the write's own lock. 42501 with a HINT unless the caller owns the target.
void add_target_columns(pg::SpiSession& spi, const pg::Relation& target, const std::vector<pg::Column>& columns,
                        const std::string& function);

}  // namespace pg_idempotent
