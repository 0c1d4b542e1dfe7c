#include "core/sql_text.hpp"

namespace pg_idempotent::core {

std::string join(const std::vector<std::string>& parts, const std::string& separator)
{
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0)
            out += separator;
        out += parts[i];
    }
    return out;
}

std::string select_columns(const std::vector<std::string>& quoted_columns,
                           const std::string& qualified_relation)
{
    return "SELECT " + join(quoted_columns) + " FROM " + qualified_relation;
}

}  // namespace pg_idempotent::core
