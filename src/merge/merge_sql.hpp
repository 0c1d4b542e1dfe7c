// The one statement idem.merge runs (pure C++: text building only).
//
// Every identifier arrives quoted, every type schema-qualified, every
// operator as OPERATOR(schema.op) and every message text as a quoted literal,
// all by the boundary layer; caller SQL (the source query, delete_scope) is
// placed as given and runs under the caller's search_path and privileges.
//
// The statement is a chain of CTEs, so the source is read once and the
// checks, the writes and the counts commit or fail together:
//   src     the source rows (keys and versions cast to the target's types)
//   stats   row count and NULL counts           -> 23502
//   tops    keys that repeat (and their highest version)
//   dups    keys with differing rows             -> 21000
//   checks  raises the first problem found, else true (gates everything)
//   dedup   one row per key (the highest version); only repeated keys sorted
//   plan    each key's action against the target (and its tombstone)
//   checks2 equal version, different content     -> ID006
//   tally   the planned counts (a dry run ends here)
//   todo    the planned writes
//   ins     new keys, in key order
//   upd/del/miss   the other writes; unchanged rows are never touched
//   tomb    tombstones for versioned deletes
// merge_sql.cpp builds each with one function of the same name (src_cte, ...).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/assignment.hpp"
#include "core/partition_prune.hpp"
#include "core/version_order.hpp"

namespace pg_idempotent::core {

// A column merge reads or writes, and how a value is converted to its type
// (core/assignment.hpp).
using MergeColumn = AssignmentTarget;

// Action codes in the plan CTE (also documented in docs/merge.md).
enum MergeAction : int {
    kInsert = 1,
    kUpdate = 2,
    kDelete = 3,
    kUnchanged = 4,
    kStale = 5,
    kConflict = 6,
    kDeleteAbsent = 7,  // a delete for a key the target does not have
};

struct MergeSpec {
    std::string target;                        // qualified, quoted
    std::string source_sql;                    // a SELECT (relation) or the caller's query
    std::vector<MergeColumn> keys;             // key columns (also in insert_columns)
    std::vector<std::string> key_eq;           // equality operator per key
    std::vector<MergeColumn> insert_columns;   // everything an insert writes
    std::vector<MergeColumn> update_columns;   // what an update writes (no key)
    VersionOrder version;                      // version_column(s); empty: none
    std::optional<std::string> delete_column;  // quoted source column (boolean)
    bool delete_missing = false;
    std::optional<std::string> delete_scope;  // caller predicate over the target
    bool allow_empty = false;
    bool dry_run = false;
    bool check_nulls = true;       // false when the source's key columns are NOT NULL
    bool check_duplicates = true;  // false when the source is unique on the key
    bool stable_source = false;    // a table: every read in one statement sees the same rows
    // plan counts the unchanged keys it leaves out through
    // idem._count_conflict (the caller adds them to the result's unchanged)
    // instead of the statement counting the source's rows once more: for a
    // source unique on the key, whose rows nothing else counts.
    bool count_unchanged = false;
    // With check_duplicates: stats finds the keys that may repeat from their
    // hashes (core/repeat_hashes.hpp), so that tops groups only their rows;
    // false (a key type without a hash function): tops groups every row.
    bool hash_keys = false;
    // Rows compared by idem._images_equal (0.9.0's SQL objects), not by
    // record_image_eq of two formed records (core/row_match.hpp).
    bool pairwise_images = false;
    bool override_identity = false;  // OVERRIDING SYSTEM VALUE on insert
    bool tombstones = false;         // version + delete_column: read and write tombstones
    // The function that reads them (0.8.0's SQL objects: idem._tombstones).
    std::string tombstones_reader = "idem._tombstones_of";
    bool partitioned = false;  // no xmax in RETURNING on a partitioned table
    // A Citus table: Citus runs parts of a write on the workers, where a
    // volatile function's side effects are lost and where it refuses one in
    // ON CONFLICT ... WHERE; so no first load and no counting in plan.
    bool citus = false;
    std::vector<std::string> version_types;  // schema-qualified, one per version column, for the tombstone read
    // A partitioned target whose partition key is one of keys: the batch's
    // values of it, which src checks and every step that reads or writes
    // the target keeps to (core/partition_prune.hpp).
    std::optional<PartitionPrune> prune;
};

// The statement; its single result row is (inserted, updated, deleted,
// unchanged, stale) as bigints. $1 is the target's OID (regclass).
std::string build_merge_sql(const MergeSpec& spec);

// A first load: the target was empty when the merge took its lock. Every
// source row is then an insert, and the statement is the INSERT ... ON
// CONFLICT a user would write; the rows it processed and the conflicts
// idem._count_conflict counted (common/conflict_tally.hpp) are the counts. Tried (first_load_applies) without versions, deletes or a dry
// run. It raises 23502 for a NULL key and 21000 for a key the source
// repeats; the caller then rolls it back and runs build_merge_sql, which
// explains both (and collapses identical repeated rows). $1 is the target.
bool first_load_applies(const MergeSpec& spec);
std::string build_first_load_sql(const MergeSpec& spec);

}  // namespace pg_idempotent::core
