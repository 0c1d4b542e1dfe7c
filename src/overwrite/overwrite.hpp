// Overwrite the unit of work (api.md section 1): replace_where and
// overwrite_partition (modes 'rewrite' and 'swap'; swap_partition.hpp has the
// swap itself).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/query_params.hpp"
#include "pg/spi.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

// Both return one row: replace_where (deleted, inserted, action,
// rows_before, rows_after, rows_differing), overwrite_partition (action,
// row_count, rows_before, rows_after, rows_differing); rows_differing is
// NULL where unknown (docs/overwrite.md, "What the result says").
void replace_where(const pg::ResultSet& out, std::uint32_t target, const std::string& predicate,
                   const std::string& query, const std::optional<std::string>& lock_timeout,
                   const pg::QueryParams& params);

struct OverwriteOptions {
    std::string mode = "rewrite";  // or "swap"
    bool keep_old = false;
    std::optional<std::string> lock_timeout;
    bool accept_losses = false;
    bool create_partition = false;  // a value no partition holds gets one (new_partition.hpp)
    pg::QueryParams params;         // the query's $1, $2, ...
};

// value: the partition key value (typed), or its text for the text overload.
void overwrite_partition(const pg::ResultSet& out, std::uint32_t parent, const pg::TypedValue& value,
                         const std::optional<std::string>& value_text, const std::string& query,
                         const OverwriteOptions& options);

}  // namespace pg_idempotent
