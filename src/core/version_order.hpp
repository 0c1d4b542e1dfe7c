// The order of a row's versions (merge's version_column, snapshot's
// updated_at): one column, compared with its type's btree operators (given
// qualified, core/assignment.hpp), or several compared in turn, the first
// deciding and the next breaking its ties (docs/merge.md, "Tie-breakers").
// Several are compared as rows by pg_catalog.record_lt and record_eq, which
// use each column type's default btree ordering, as the one column's
// operators are; pure C++, text building only.
#pragma once

#include <string>
#include <vector>

#include "core/assignment.hpp"

namespace pg_idempotent::core {

struct VersionOrder {
    std::vector<AssignmentTarget> columns;  // in order; empty: no version
    std::string lt, eq;                     // the operators of a single column

    bool empty() const { return columns.empty(); }
    bool single() const { return columns.size() == 1; }
    bool has(const std::string& quoted_name) const;

    // The version of the row alias q ("" for unqualified): "q.v", or
    // "ROW(q.v1, q.v2)".
    std::string value(const std::string& q) const;
    // a < b, a = b, for two value()s (or any expressions of that shape).
    std::string less(const std::string& a, const std::string& b) const;
    std::string equal(const std::string& a, const std::string& b) const;
    // "q.v DESC" or "q.v1 DESC, q.v2 DESC": the newest first.
    std::string descending(const std::string& q) const;
    // "q.v IS NULL" or "(q.v1 IS NULL OR q.v2 IS NULL)".
    std::string any_null(const std::string& q) const;
    // The names for a message, as a SQL text expression ("a, b"), each
    // passed through fn (e.g. "pg_catalog.quote_ident") when given.
    std::string names_literal(const std::string& fn = "") const;
};

}  // namespace pg_idempotent::core
