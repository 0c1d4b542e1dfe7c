// Small helpers for SQL text the extension writes itself. Pure C++: callers
// pass identifiers already quoted by the boundary layer (pg::quote_ident) and
// values only as $n parameters, so nothing here can splice caller text.
#pragma once

#include <string>
#include <vector>

namespace pg_idempotent::core {

// "a, b, c" (or "" for none).
std::string join(const std::vector<std::string>& parts, const std::string& separator = ", ");

// "SELECT <columns> FROM <relation>"; an empty column list selects zero-column
// rows, which still count.
std::string select_columns(const std::vector<std::string>& quoted_columns,
                           const std::string& qualified_relation);

}  // namespace pg_idempotent::core
