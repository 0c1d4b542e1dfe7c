// idem.merge and idem.merge_query (api.md section 2): merge on the business
// key, leaving unchanged rows untouched, with versions, deletes and tombstones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/batch_source.hpp"
#include "common/schema_drift.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

using MergeSource = BatchSource;  // merge(target, source regclass), merge_query(target, query text)

struct MergeOptions {
    std::optional<std::vector<std::string>> key;
    // version_column: one column, or several ('{updated_at,_loaded_at}')
    // compared in order, the next breaking the ties of the one before.
    std::vector<std::string> version_columns;
    std::optional<std::string> delete_column;
    bool delete_missing = false;
    std::optional<std::string> delete_scope;
    std::optional<std::vector<std::string>> columns;
    std::optional<std::vector<std::string>> exclude_columns;  // what an update does not write
    OnSchemaChange on_schema_change = OnSchemaChange::kFail;
    bool allow_empty = false;
    bool dry_run = false;
};

// Runs the merge and returns its one row of counts as the result set.
void merge(const pg::ResultSet& out, std::uint32_t target, const MergeSource& source, const MergeOptions& options);

}  // namespace pg_idempotent
