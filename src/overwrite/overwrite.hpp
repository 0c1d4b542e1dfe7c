// Overwrite the unit of work (api.md section 1): replace_where and
// overwrite_partition (modes 'rewrite' and 'swap'; swap_partition.hpp has the
// swap itself).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/spi.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

void replace_where(const pg::ResultSet& out, std::uint32_t target, const std::string& predicate,
                   const std::string& query, const std::optional<std::string>& lock_timeout);

// value: the partition key value (typed), or its text for the text overload.
void overwrite_partition(const pg::ResultSet& out, std::uint32_t parent, const pg::TypedValue& value,
                         const std::optional<std::string>& value_text, const std::string& query,
                         const std::string& mode, bool keep_old, const std::optional<std::string>& lock_timeout,
                         bool accept_losses);

}  // namespace pg_idempotent
