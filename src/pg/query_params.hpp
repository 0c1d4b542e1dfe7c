// Bind parameters of the caller's SQL (docs/reference.md, "Bind
// parameters"): the values of idem.params(...) are bound to $1, $2, ... of
// a function's query (and predicate or audit), never spliced into its text.
#pragma once

#include <string>

#include "pg/spi.hpp"

namespace pg_idempotent::pg {

struct QueryParams {
    Params values;  // $1, $2, ...: each of its own type
    // For the run history: [{"type": "date", "value": "2024-07-07"}, ...],
    // each value cut at 200 characters and at most 20 of them; "" for none.
    std::string history_json;
    bool empty() const { return values.empty(); }
};

// The caller's SQL with each $n parameter reference made $(n + by), found by
// PostgreSQL's own lexer (so a "$1" inside a string, a comment or a
// dollar-quoted body stays as it is): the caller's SQL inside a statement of
// the extension's whose own parameters take $1 to $by.
std::string shift_params(const std::string& sql, int by);

// 42P02 when sql refers to a $n that params does not give (none given, or
// fewer values than its highest $n), naming what the SQL is ("the query",
// "the predicate") and how to pass the values. Checked before anything
// runs, as PostgreSQL would refuse it only deep inside a statement of the
// extension's own.
void require_bound(const std::string& sql, const QueryParams& params, const std::string& what);

// The caller's parameters after a statement's own: own then caller.
Params with_caller_params(Params own, const QueryParams& caller);

}  // namespace pg_idempotent::pg
