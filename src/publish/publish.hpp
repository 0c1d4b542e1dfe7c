// Immutable versions behind a view (api.md section 4): publish, rollback,
// versions, pin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/query_params.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// params: the values of the query's (and the audit's) $1, $2, ...
std::int32_t publish(const std::string& dataset, const std::string& query, std::int32_t keep,
                     const std::optional<std::string>& audit, const std::optional<std::string>& lock_timeout,
                     const pg::QueryParams& params);
// hold: publish builds nothing until idem.release (hold.hpp).
std::int32_t rollback(const std::string& dataset, std::optional<std::int32_t> version,
                      const std::optional<std::string>& lock_timeout, bool hold);
void versions(const pg::ResultSet& out, const std::string& dataset);
// Registers an existing view (of the caller's) as the dataset's, so publish
// may replace it; its owner becomes the dataset's registered owner.
void adopt(const std::string& dataset);
void pin(const std::string& dataset, std::int32_t version, bool pinned);

}  // namespace pg_idempotent
