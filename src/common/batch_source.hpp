// The batch a bulk writing function reads (merge, append): a relation or the
// caller's query, its columns, and the key it is matched on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/assignment.hpp"
#include "pg/catalog.hpp"
#include "pg/query_params.hpp"

namespace pg_idempotent {

struct BatchSource {
    std::optional<std::uint32_t> relation;  // f(target, source regclass)
    std::optional<std::string> query;       // f_query(target, query text)
    pg::QueryParams params;                 // f_query's params: its $1, $2, ...
};

// The source as the function reads it: its columns, by distinct names, and
// the SELECT that yields them.
struct SourceShape {
    std::optional<pg::Relation> relation;  // when the source is a relation
    std::vector<pg::Column> columns;
    std::string sql;
    pg::QueryParams params;  // the values of sql's $1, $2, ... (a query's)
    // A table or materialized view reads the same in every scan of one
    // statement; a view, a foreign table or a query may not (volatile
    // functions, a remote server).
    bool stable() const;
};

// The target of a bulk write: 42809 "<t> is not a table" unless it is a
// table or a partitioned table, with why as the HINT.
pg::Relation describe_table_target(std::uint32_t oid, const std::string& why);

// 42809 for a source that is not a table, view, materialized view or foreign
// table; 42701 for two columns of one name. function names the caller in
// messages ("idem.merge").
SourceShape describe_source(const BatchSource& source, const std::string& function);

const pg::Column* find_column(const std::vector<pg::Column>& cols, const std::string& name);

// 42703 unless the target has the column (named by the caller in the
// argument named_in, e.g. exclude_columns: a name the target lacks is a
// typo, as in idem.checksum's exclude_columns).
void require_target_column(const pg::Relation& target, const std::string& column, const std::string& named_in);

// The key: the given columns (checked: named once, present in the target),
// or the target's primary key; 55000 when there is neither (with hint).
std::vector<std::string> resolve_key(const pg::Relation& target, const std::optional<std::vector<std::string>>& key,
                                     const std::vector<pg::UniqueIndex>& indexes, const std::string& function,
                                     const std::string& hint);

// Whether a usable unique index covers exactly the key columns.
bool has_unique_index_on(const std::vector<std::string>& key, const std::vector<pg::UniqueIndex>& indexes);

// Whether the source relation is a table whose key columns are NOT NULL, of
// the target's types, with a usable unique index on exactly the key: its
// NULL and duplicate checks cannot fail.
bool source_unique_on_key(const SourceShape& src, const std::vector<std::string>& key, const pg::Relation& target);

// Which source columns an insert writes, and what to say about the others.
struct InsertColumnRules {
    std::string function;             // "idem.merge", for messages
    std::optional<std::string> skip;  // a source column never written (merge's delete flag)
    bool ignore_extra = false;        // source columns the target lacks are left out
    std::string extra_detail;         // else 42703, with this DETAIL and HINT
    std::string extra_hint;
    bool override_identity = false;  // GENERATED ALWAYS identity columns may be written
    std::string identity_hint;       // else 428C9 with this HINT
};

// Whether merge and append can find the keys a batch repeats from their
// hashes (pg::key_hashable for every key column, core/repeat_hashes.hpp):
// false when a column cannot be hashed or the installed SQL objects lack
// idem._repeat_hashes; every row is then grouped.
bool keys_hashable(const pg::Relation& target, const std::vector<std::string>& key);

// What an insert writes: every source column the target has (generated
// columns never), as the target converts it; 42804 for a column without an
// assignment cast.
std::vector<core::AssignmentTarget> insert_columns(const SourceShape& src, const pg::Relation& target,
                                                   const InsertColumnRules& rules);

}  // namespace pg_idempotent
