// The one statement idem.snapshot runs (pure C++: text building only).
//
// As merge's (merge/merge_sql.hpp), every identifier arrives quoted, every
// type schema-qualified, every operator as OPERATOR(schema.op); caller SQL
// (the source query) is placed as given. A chain of CTEs, so the checks,
// the closing of versions and the opening of new ones commit or fail
// together:
//   run     the snapshot's time: as_of ($2) or the transaction's now()
//   src     the source rows (keys cast to the target's types)
//   stats   row count and NULL key counts                    -> 23502
//   tops    keys the source repeats (usually none)
//   dups    repeated keys whose rows differ (at their largest
//           updated_at, for the timestamp strategy)           -> 21000
//   checks  raises the first problem found, else true (gates everything)
//   dedup   one row per key (the largest updated_at)
//   plan    each key against its current version: new, changed, stale;
//           unchanged keys are left out here, so a rerun writes nothing
//   gone    current versions whose key the source lacks (invalidate,
//           new_record: not already marked deleted)
//   checks2 time moves forward: every version closed began before run.at;
//           no new key has a version current under the other convention
//   tally   the planned counts
//   cls     closes the changed and gone versions (valid_to = run.at)
//   ins     opens the new versions (and, with new_record, the deleted
//           markers), after cls (its count gates the insert, so no new
//           current row meets the old one in the unique index)
// The result row: inserted, changed, deleted, unchanged, stale, closed,
// opened, as bigints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/assignment.hpp"
#include "core/partition_prune.hpp"
#include "core/version_order.hpp"

namespace pg_idempotent::core {

struct SnapshotSpec {
    std::string target;                             // qualified, quoted
    std::string source_sql;                         // a SELECT (relation) or the caller's query
    std::vector<AssignmentTarget> keys;             // key columns (also in insert_columns)
    std::vector<std::string> key_eq;                // equality operator per key
    std::vector<AssignmentTarget> insert_columns;   // the data columns a version writes
    std::vector<AssignmentTarget> compare_columns;  // what makes a version changed (no key)
    std::string valid_from;                         // quoted column names
    std::string valid_to;
    std::string validity_type;  // their type, schema-qualified
    // valid_to_current: current versions hold $3 (text, cast to the
    // validity type: 'infinity', as dbt's dbt_valid_to_current) in
    // valid_to instead of NULL.
    bool current_value = false;
    // Versions current under the other convention, written by hand: a new
    // key (no current version under this call's) that has one is refused,
    // else it would get a second current version. kNull: valid_to IS NULL
    // (the call marks by a value); kFarFuture: from the year 9999 on (the
    // call marks by NULL, valid_to is a timestamp); kNone: not checked.
    enum class OtherMark { kNone, kNull, kFarFuture };
    OtherMark other_mark = OtherMark::kNone;
    // The timestamp strategy: the column (or columns compared in order,
    // core/version_order.hpp; quoted, in insert_columns) whose larger value
    // opens a version. Empty: the check strategy.
    VersionOrder updated_at;
    bool invalidate = false;  // hard_deletes => 'invalidate' or 'new_record': close a gone key's version
    // hard_deletes => 'new_record': the boolean column (quoted) of the
    // version that marks a key deleted; a gone key also gets one, a copy of
    // its closed version marked true, and a key whose current version is a
    // marker is not gone again.
    std::optional<std::string> deleted_column;
    bool refuse_empty = false;  // invalidate without allow_empty: an empty source is 22023
    bool check_nulls = true;
    bool check_duplicates = true;  // false: the source is unique on the key
    bool stable_source = false;    // a table: read in every step, not copied
    bool hash_keys = false;        // as merge's: repeated keys found from their hashes
    // Rows compared by idem._images_equal (0.9.0's SQL objects), not by
    // record_image_eq of two formed records (core/row_match.hpp).
    bool pairwise_images = false;
    // A history partitioned on a key column: the batch's values of it,
    // which src checks and every read of the history keeps to
    // (core/partition_prune.hpp). Not with invalidate (gone reads every
    // current version).
    std::optional<PartitionPrune> prune;
};

// $1 is the target's OID (regclass, for messages), $2 as_of (timestamptz or
// NULL), $3 valid_to_current (text or NULL).
std::string build_snapshot_sql(const SnapshotSpec& spec);

}  // namespace pg_idempotent::core
