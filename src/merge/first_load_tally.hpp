// The conflicts of a first load (merge_sql.hpp's build_first_load_sql),
// counted as its INSERT ... ON CONFLICT meets them.
//
// The statement runs without RETURNING (a tuplestore of every inserted row,
// spilled to temp files at a million rows) and without counting the source
// (a second scan): PostgreSQL reports the rows it inserted or updated, and
// idem._first_load_conflict, called in the ON CONFLICT ... WHERE for each
// conflict and nowhere else, counts which of them were updates and which
// found the same row already there (unchanged). The WHERE runs once per
// conflicting source row, after the row is locked (a lock that finds the row
// changed retries the insert before it).
#pragma once

#include <cstdint>

namespace pg_idempotent {

struct FirstLoadConflicts {
    std::int64_t updated = 0;
    std::int64_t unchanged = 0;
};

// Forgets the counts of target (before its statement runs).
void reset_first_load_conflicts(std::uint32_t target);

// Counts one conflict on target; returns whether the row is to be updated
// (its content differs).
bool note_first_load_conflict(std::uint32_t target, bool same_content);

FirstLoadConflicts first_load_conflicts(std::uint32_t target);

}  // namespace pg_idempotent
