// idem.snapshot, idem.snapshot_query and idem.snapshot_prepare: history
// tables (slowly changing dimensions, type 2; dbt's snapshots) kept in the
// caller's transaction, so that a rerun writes nothing and two runs at once
// give the result of one after the other (docs/snapshot.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/batch_source.hpp"
#include "common/schema_drift.hpp"
#include "pg/spi.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

struct SnapshotOptions {
    std::vector<std::string> key;
    std::string strategy = "check";  // or "timestamp"
    // The timestamp strategy's column, or several compared in order
    // ('{updated_at,_loaded_at}': the next breaks the ties of the one before).
    std::vector<std::string> updated_at;
    std::optional<std::vector<std::string>> columns;          // check: the columns compared
    std::optional<std::vector<std::string>> exclude_columns;  // or all but these
    std::string hard_deletes = "ignore";                      // or "invalidate", "new_record"
    std::string deleted_column = "is_deleted";                // new_record's marker column
    std::string valid_from = "valid_from";
    std::string valid_to = "valid_to";
    std::optional<std::string> valid_to_current;  // NULL: current versions have valid_to NULL
    pg::TypedValue as_of;                         // NULL: the transaction's now()
    bool allow_empty = false;
    OnSchemaChange on_schema_change = OnSchemaChange::kFail;
};

void snapshot(const pg::ResultSet& out, std::uint32_t target, const BatchSource& source,
              const SnapshotOptions& options);

// The partial unique index that allows one current version per key: created
// once, its name returned (also when it was there).
std::string snapshot_prepare(std::uint32_t target, const std::vector<std::string>& key, const std::string& valid_to,
                             const std::optional<std::string>& valid_to_current);

}  // namespace pg_idempotent
