// The one statement idem.append runs (pure C++: text building only).
//
// As merge's (merge/merge_sql.hpp), every identifier arrives quoted, every
// type schema-qualified, every operator as OPERATOR(schema.op); caller SQL
// (the source query) is placed as given. A chain of CTEs, so the checks and
// the insert commit or fail together:
//   src     the source rows (keys cast to the target's types)
//   stats   row count and NULL key counts        -> 23502
//   tops    keys the batch repeats (usually none)
//   dups    repeated keys whose events differ    -> ID005
//   checks  raises the first problem found, else true (gates everything)
//   dedup   one row per key
//   [win]   with within: the window of the target's partition key to read
//   plan    each key against the target: new, the same event, another one
//   checks2 a key already there with other content -> ID005 (unless keep_first)
//   tally   the planned counts
//   ins     the new events (ON CONFLICT with a unique index on the key)
// The result row: (to_insert, duplicate, conflicting) as bigints, before the
// conflicts the insert itself met (append.cpp adds those).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/assignment.hpp"
#include "core/partition_prune.hpp"

namespace pg_idempotent::core {

struct AppendSpec {
    std::string target;                             // qualified, quoted
    std::string source_sql;                         // a SELECT (relation) or the caller's query
    std::vector<AssignmentTarget> keys;             // key columns (also in insert_columns)
    std::vector<std::string> key_eq;                // equality operator per key
    std::vector<AssignmentTarget> insert_columns;   // what an insert writes
    std::vector<AssignmentTarget> compare_columns;  // what "the same event" compares (no key)
    std::string target_literal;                     // the target's name as a literal, for messages
    bool keep_first = false;                        // on_conflict => 'keep_first'
    bool check_nulls = true;
    bool check_duplicates = true;  // false: the source is unique on the key
    bool stable_source = false;    // a table: read in every step, not copied
    bool arbiter = false;          // a unique index on exactly the key: ON CONFLICT
    // within: the target's partition key (quoted) and its type; the window is
    // $2 (an interval) either side of the batch's own values.
    std::optional<AssignmentTarget> window_column;
    // As merge's (merge_sql.hpp): stats finds the keys that may repeat from
    // their hashes; false: tops groups every row.
    bool hash_keys = false;
    // Rows compared by idem._images_equal (0.9.0's SQL objects), not by
    // record_image_eq of two formed records (core/row_match.hpp).
    bool pairwise_images = false;
    // A Citus table: Citus runs parts of a write on the workers, where
    // idem._count_conflict's counts are lost (and refuses it in ON CONFLICT
    // ... WHERE): the whole statement only, its INSERT without ON CONFLICT
    // (appends of one target take turns on the coordinator).
    bool citus = false;
    // A partitioned target whose partition key is a key column, or the
    // column within widens: the batch's values (or range) of it, which src
    // checks and every read of the target keeps to (core/partition_prune.hpp).
    std::optional<PartitionPrune> prune;
    // The target (or its pruned partitions) held no row when the append took
    // its lock: the one INSERT has nothing to look up (a concurrent writer's
    // event, or one the batch repeats, fails it with 23505, and the whole
    // statement runs instead).
    bool target_empty = false;
};

// $1 is the target's OID (regclass), $2 the window's interval (with
// window_column).
std::string build_append_sql(const AppendSpec& spec);

// With a unique index on the key, the append is one INSERT ... SELECT with
// no CTE and no ON CONFLICT: the source joined to the target, each key
// already there counted by idem._count_conflict (the same event or another)
// in the WHERE and left out, the others inserted. The rows it inserted, and
// the conflicts counted, are the counts. It raises 23502 for a NULL key and
// 23505 for a new key the batch repeats or a concurrent writer inserted
// meanwhile (the unique index); for those, and for an event with other
// content when that is an error, the caller rolls it back and runs
// build_append_sql, which explains or counts them. Without a unique index on
// the target, only for a source unique on the key (nothing else would stop
// it from inserting a key the batch repeats twice; appends take turns, so
// no other append can). A window reads the source twice: only for a table
// source.
bool fast_append_applies(const AppendSpec& spec);
std::string build_fast_append_sql(const AppendSpec& spec);

}  // namespace pg_idempotent::core
