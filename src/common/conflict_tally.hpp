// The conflicts an INSERT ... ON CONFLICT of merge's first load or of append
// meets, counted as it meets them.
//
// Those statements run without RETURNING (a tuplestore of every inserted
// row, spilled to temp files at a million rows): PostgreSQL reports the rows
// an INSERT processed, and idem._count_conflict, called in the ON CONFLICT
// ... WHERE for each conflict and nowhere else, counts which conflicts found
// the same row already there and which another one. The WHERE runs once per
// conflicting source row, after the row is locked (a lock that finds the row
// changed retries the insert before it).
#pragma once

#include <cstdint>

namespace pg_idempotent {

struct ConflictCounts {
    std::int64_t same = 0;    // the row there has the same content
    std::int64_t differ = 0;  // another content
};

// Forgets the counts of target (before its statement runs).
void reset_conflicts(std::uint32_t target);

// Counts one conflict on target; returns whether the row is to be updated:
// may_update (merge) and its content differs.
bool note_conflict(std::uint32_t target, bool same_content, bool may_update);

ConflictCounts conflicts(std::uint32_t target);

}  // namespace pg_idempotent
