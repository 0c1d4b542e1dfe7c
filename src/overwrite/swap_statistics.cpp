#include "overwrite/swap_statistics.hpp"

#include <algorithm>
#include <utility>

#include "overwrite/swap_indexes.hpp"
#include "pg/catalog.hpp"
#include "pg/roles.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::QueryResult;

std::string text(const pg::Row& row, std::size_t col)
{
    return row.at(col).value_or("");
}

std::string qualified(const std::string& schema, const std::string& name)
{
    return pg::quote_ident(schema) + "." + pg::quote_ident(name);
}

// Each statistics object of rel: schema, name, its columns and expressions
// as CREATE STATISTICS takes them, its kinds (NULL when it has only one
// expression, which takes none), its statistics target unless the default,
// its owner when another role than the current user, and its comment.
// Deparsed under the canonical settings (partitions.hpp), as the swap's
// other definitions are.
QueryResult statistics_of(pg::SpiSession& spi, std::uint32_t rel)
{
    QueryResult r;
    pg::with_canonical_settings([&] {
        r = spi.query(
            "SELECT n.nspname::pg_catalog.text, x.stxname::pg_catalog.text,"
            " pg_catalog.pg_get_statisticsobjdef_columns(x.oid),"
            " (SELECT pg_catalog.string_agg(CASE WHEN k OPERATOR(pg_catalog.=) 'd' THEN 'ndistinct'"
            "   WHEN k OPERATOR(pg_catalog.=) 'f' THEN 'dependencies' ELSE 'mcv' END, ', ' ORDER BY k)"
            "   FROM pg_catalog.unnest(x.stxkind) k WHERE k OPERATOR(pg_catalog.<>) 'e'),"
            " CASE WHEN x.stxstattarget IS NOT NULL AND x.stxstattarget OPERATOR(pg_catalog.<>) -1"
            "  THEN x.stxstattarget::pg_catalog.text END,"
            " CASE WHEN x.stxowner OPERATOR(pg_catalog.<>) $2"
            "  THEN pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(x.stxowner)) END,"
            " pg_catalog.obj_description(x.oid, 'pg_statistic_ext')"
            " FROM pg_catalog.pg_statistic_ext x"
            " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.stxnamespace"
            " WHERE x.stxrelid OPERATOR(pg_catalog.=) $1 ORDER BY x.oid",
            {Param::of_oid(rel), Param::of_oid(pg::current_user_id())});
    });
    return r;
}

// What makes two objects equivalent: their columns or expressions and kinds.
std::string shape(const pg::Row& row)
{
    return text(row, 2) + "|" + text(row, 3);
}

// Builds one object of the old partition on the staging table as name.
void build(pg::SpiSession& spi, const pg::Row& row, const pg::Relation& staging, const std::string& name)
{
    const std::string target = qualified(text(row, 0), name);
    const std::string kinds = row.at(3) ? " (" + text(row, 3) + ")" : "";
    spi.execute("CREATE STATISTICS " + target + kinds + " ON " + text(row, 2) + " FROM " + staging.qualified);
    if (row.at(4))
        spi.execute("ALTER STATISTICS " + target + " SET STATISTICS " + text(row, 4));
    if (row.at(6))
        spi.execute("COMMENT ON STATISTICS " + target + " IS " + pg::quote_literal(text(row, 6)));
    if (row.at(5))
        spi.execute("ALTER STATISTICS " + target + " OWNER TO " + text(row, 5));
}

}  // namespace

std::vector<CarriedStatistics> carry_extended_statistics(pg::SpiSession& spi, const Partition& part,
                                                         const pg::Relation& staging)
{
    const QueryResult old = statistics_of(spi, part.rel.oid);
    if (old.rows.empty())
        return {};
    const QueryResult mine = statistics_of(spi, staging.oid);
    std::vector<const pg::Row*> unused;
    for (const auto& row : mine.rows)
        unused.push_back(&row);
    std::vector<CarriedStatistics> out;
    for (const auto& row : old.rows) {
        const std::string schema = text(row, 0);
        auto same = std::find_if(unused.begin(), unused.end(), [&](const pg::Row* have) {
            return shape(*have) == shape(row) && text(*have, 0) == schema;
        });
        if (same != unused.end()) {
            out.push_back({schema, text(row, 1), text(**same, 1)});
            unused.erase(same);
            continue;
        }
        const std::string name = free_name(spi, schema, text(row, 1), "__swap_", NameSpace::kStatistics);
        build(spi, row, staging, name);
        out.push_back({schema, text(row, 1), name});
    }
    return out;
}

void rename_kept_statistics(pg::SpiSession& spi, std::uint32_t kept_table)
{
    for (const auto& row : statistics_of(spi, kept_table).rows) {
        const std::string schema = text(row, 0);
        const std::string name = text(row, 1);
        spi.execute("ALTER STATISTICS " + qualified(schema, name) + " RENAME TO " +
                    pg::quote_ident(free_name(spi, schema, name, "__replaced_", NameSpace::kStatistics)));
    }
}

void name_carried_statistics(pg::SpiSession& spi, const std::vector<CarriedStatistics>& carried)
{
    for (const auto& s : carried)
        if (s.staging_name != s.old_name)
            spi.execute("ALTER STATISTICS " + qualified(s.schema, s.staging_name) + " RENAME TO " +
                        pg::quote_ident(s.old_name));
}

}  // namespace pg_idempotent
