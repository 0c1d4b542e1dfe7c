// Tombstones of versioned merges (idem.tombstones): what a versioned delete
// leaves so that an older row cannot bring the key back. Reached only by
// roles with the matching privilege on the target table, checked here as the
// caller before the extension owner touches the state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/spi.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

// The target's tombstones (key digest, version in canonical text): needs
// SELECT on the target.
void tombstones(const pg::ResultSet& out, std::uint32_t target);

// Records versioned deletes (arrays of equal length: uuid[], jsonb[],
// text[]): needs DELETE on the target. Returns how many were written.
std::int64_t put_tombstones(std::uint32_t target, const pg::TypedValue& key_digests, const pg::TypedValue& key_data,
                            const pg::TypedValue& versions);

// Deletes the target's tombstones older than the interval (text): needs
// DELETE on the target, since an older row may then come back.
std::int64_t purge_tombstones(std::uint32_t target, const std::string& older_than);

}  // namespace pg_idempotent
