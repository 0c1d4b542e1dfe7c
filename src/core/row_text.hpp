// One row as JSON text with its columns in the table's order, spaced as
// jsonb prints (pure C++: text building only; the CLI includes it too).
//
// to_jsonb orders keys by length, then bytes, so a row of (store, day)
// showed as {"day": ..., "store": ...}; to_json keeps the column order but
// prints no spaces. json_each of to_json keeps the order, and the pieces are
// joined as jsonb would print them.
#pragma once

#include <string>

namespace pg_idempotent::core {

// alias: a row value (e.g. the alias of a subquery) of the statement.
inline std::string row_text_in_column_order(const std::string& alias)
{
    return "(SELECT pg_catalog.concat('{', pg_catalog.string_agg(pg_catalog.concat(pg_catalog.to_json(e.key), ': ', "
           "e.value), ', ' ORDER BY e.n), '}') FROM pg_catalog.json_each(pg_catalog.to_json(" +
           alias + ")) WITH ORDINALITY AS e(key, value, n))";
}

}  // namespace pg_idempotent::core
