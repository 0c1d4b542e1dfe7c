#include "core/version_order.hpp"

#include "core/sql_text.hpp"

namespace pg_idempotent::core {

namespace {

std::string qualified(const std::string& q, const AssignmentTarget& c)
{
    return q.empty() ? c.name : q + "." + c.name;
}

}  // namespace

bool VersionOrder::has(const std::string& quoted_name) const
{
    for (const auto& c : columns)
        if (c.name == quoted_name)
            return true;
    return false;
}

std::string VersionOrder::value(const std::string& q) const
{
    if (single())
        return qualified(q, columns[0]);
    std::vector<std::string> parts;
    for (const auto& c : columns)
        parts.push_back(qualified(q, c));
    return "ROW(" + join(parts) + ")";
}

std::string VersionOrder::less(const std::string& a, const std::string& b) const
{
    if (single())
        return a + " " + lt + " " + b;
    return "pg_catalog.record_lt(" + a + ", " + b + ")";
}

std::string VersionOrder::equal(const std::string& a, const std::string& b) const
{
    if (single())
        return a + " " + eq + " " + b;
    return "pg_catalog.record_eq(" + a + ", " + b + ")";
}

std::string VersionOrder::descending(const std::string& q) const
{
    std::vector<std::string> parts;
    for (const auto& c : columns)
        parts.push_back(qualified(q, c) + " DESC");
    return join(parts);
}

std::string VersionOrder::any_null(const std::string& q) const
{
    std::vector<std::string> parts;
    for (const auto& c : columns)
        parts.push_back(qualified(q, c) + " IS NULL");
    return single() ? parts[0] : "(" + join(parts, " OR ") + ")";
}

std::string VersionOrder::names_literal(const std::string& fn) const
{
    std::vector<std::string> parts;
    for (const auto& c : columns)
        parts.push_back(fn.empty() ? c.name_literal : fn + "(" + c.name_literal + ")");
    return single() ? parts[0] : "pg_catalog.concat_ws(', ', " + join(parts) + ")";
}

}  // namespace pg_idempotent::core
