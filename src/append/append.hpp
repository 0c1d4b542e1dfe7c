// idem.append and idem.append_query: event logs that a replay cannot double.
// An event already in the target with the same content is a duplicate
// (counted, not written); with other content, an error of the extension's
// own class (ID005) or, with on_conflict => 'keep_first', counted and left.
// docs/append.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/batch_source.hpp"
#include "common/schema_drift.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

struct AppendOptions {
    std::optional<std::vector<std::string>> key;              // default: the primary key
    std::optional<std::vector<std::string>> exclude_columns;  // not part of "the same event"
    std::string on_conflict = "error";                        // or "keep_first"
    std::optional<std::string> within;                        // an interval's text
    OnSchemaChange on_schema_change = OnSchemaChange::kFail;
};

// Runs the append and returns its one row of counts (inserted, duplicate,
// conflicting) as the result set.
void append(const pg::ResultSet& out, std::uint32_t target, const BatchSource& source, const AppendOptions& options);

}  // namespace pg_idempotent
