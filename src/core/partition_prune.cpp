#include "core/partition_prune.hpp"

#include "core/assignment.hpp"

namespace pg_idempotent::core {

namespace {

std::string param(const PartitionPrune& p, int offset)
{
    return "$" + std::to_string(p.first + offset);
}

std::string inside(const PartitionPrune& p, const std::string& ref, int offset)
{
    if (!p.window)
        return ref + " " + p.eq + " ANY (" + param(p, offset) + ")";
    return ref + " OPERATOR(pg_catalog.>=) " + param(p, offset) + " AND " + ref + " OPERATOR(pg_catalog.<=) " +
           param(p, offset + 1);
}

std::string batch_select(const std::string& source_sql, const AssignmentTarget& column)
{
    return "SELECT " + cast_to_target("s." + column.name, column) + " AS v FROM (" + source_sql + "\n) AS s";
}

}  // namespace

std::string prune_condition(const PartitionPrune& p, const std::string& alias)
{
    return " AND " + inside(p, alias + "." + p.column.name, 0);
}

std::string prune_row_check(const PartitionPrune& p, const std::string& alias)
{
    const std::string ref = cast_to_target(alias + "." + p.column.name, p.column);
    return "(" + ref + " IS NULL OR " + inside(p, ref, p.window ? 2 : 0) + " OR idem._raise('" + p.sqlstate +
           "', 'the batch has rows of partitions it did not have a moment before', NULL, "
           "'The statement runs again over every partition.'))";
}

std::string partition_values_sql(const std::string& source_sql, const AssignmentTarget& column, int limit)
{
    return "SELECT idem._canonical_text(pg_catalog.array_agg(d.v)) FROM (SELECT DISTINCT b.v FROM (" +
           batch_select(source_sql, column) + ") AS b) AS d HAVING pg_catalog.count(*) OPERATOR(pg_catalog.<=) " +
           std::to_string(limit);
}

std::string partition_window_sql(const std::string& source_sql, const AssignmentTarget& column,
                                 const std::string& within)
{
    const std::string lo = "pg_catalog.min(b.v)";
    const std::string hi = "pg_catalog.max(b.v)";
    const std::string w = within + "::pg_catalog.interval";
    return "SELECT idem._canonical_text(CAST(" + lo + " OPERATOR(pg_catalog.-) " + w + " AS " + column.type +
           ")), idem._canonical_text(CAST(" + hi + " OPERATOR(pg_catalog.+) " + w + " AS " + column.type +
           ")), idem._canonical_text(" + lo + "), idem._canonical_text(" + hi + ") FROM (" +
           batch_select(source_sql, column) + ") AS b";
}

}  // namespace pg_idempotent::core
