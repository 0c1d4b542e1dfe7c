#include "overwrite/swap_indexes.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "core/sql_text.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/settings.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::QueryResult;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

std::string text(const pg::Row& row, std::size_t col)
{
    return row.at(col).value_or("");
}

// Every index of rel attached to no parent index: name, pg_get_indexdef,
// its constraint's kind and definition (PRIMARY KEY, UNIQUE, EXCLUDE), its
// tablespace ("" = default). Deparsed under the canonical settings
// (partitions.hpp), as the swap's other definitions are.
QueryResult own_indexes(pg::SpiSession& spi, std::uint32_t rel)
{
    QueryResult r;
    pg::with_canonical_settings([&] {
        r = spi.query(
            "SELECT ic.relname::pg_catalog.text, pg_catalog.pg_get_indexdef(i.indexrelid),"
            " con.contype::pg_catalog.text, pg_catalog.pg_get_constraintdef(con.oid),"
            " COALESCE((SELECT t.spcname::pg_catalog.text FROM pg_catalog.pg_tablespace t"
            "   WHERE t.oid OPERATOR(pg_catalog.=) ic.reltablespace), '')"
            " FROM pg_catalog.pg_index i"
            " JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid"
            " LEFT JOIN pg_catalog.pg_constraint con ON con.conindid OPERATOR(pg_catalog.=) i.indexrelid"
            "  AND con.conrelid OPERATOR(pg_catalog.=) i.indrelid AND con.contype IN ('p', 'u', 'x')"
            " WHERE i.indrelid OPERATOR(pg_catalog.=) $1"
            " AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits h WHERE h.inhrelid OPERATOR(pg_catalog.=) i.indexrelid)"
            " ORDER BY i.indexrelid",
            {Param::of_oid(rel)});
    });
    return r;
}

// How an index compares: its constraint's definition, or its CREATE INDEX
// without the name and table.
std::string index_shape(const pg::Row& row, const std::string& table)
{
    if (row.at(2))
        return text(row, 2) + " " + text(row, 3);
    return core::index_definition_on(text(row, 1), pg::quote_ident(text(row, 0)), table, "T");
}

// The statement that builds an old partition's index (row of own_indexes)
// on the staging table under name.
std::string build_on_staging(const pg::Row& row, const Partition& part, const pg::Relation& staging,
                             const std::string& name)
{
    if (row.at(2))
        return "ALTER TABLE " + staging.qualified + " ADD CONSTRAINT " + pg::quote_ident(name) + " " + text(row, 3);
    // "CREATE [UNIQUE] INDEX ON staging ...", named.
    std::string sql =
        core::index_definition_on(text(row, 1), pg::quote_ident(text(row, 0)), part.rel.qualified, staging.qualified);
    const std::size_t at = sql.find("INDEX ON ");
    return sql.substr(0, at) + "INDEX " + pg::quote_ident(name) + sql.substr(at + 5);
}

// The shapes of the parent's indexes: the staging table's copies of them
// (add_parent_indexes, or LIKE ... INCLUDING ALL) are the parent's, never
// stand-ins for one of the partition's own.
std::vector<std::string> parent_index_shapes(pg::SpiSession& spi, const Partition& part)
{
    std::vector<std::string> shapes;
    for (const auto& row : own_indexes(spi, part.parent).rows)
        shapes.push_back(index_shape(row, "ONLY " + part.parent_qualified));
    return shapes;
}

}  // namespace

std::string free_name(pg::SpiSession& spi, const std::string& schema, const std::string& name, const std::string& stem,
                      NameSpace in)
{
    const std::string taken_sql =
        in == NameSpace::kRelations
            ? "SELECT EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace s"
              " ON s.oid OPERATOR(pg_catalog.=) c.relnamespace WHERE s.nspname OPERATOR(pg_catalog.=) $1"
              " AND c.relname OPERATOR(pg_catalog.=) $2)::pg_catalog.text"
            : "SELECT EXISTS (SELECT FROM pg_catalog.pg_statistic_ext x JOIN pg_catalog.pg_namespace s"
              " ON s.oid OPERATOR(pg_catalog.=) x.stxnamespace WHERE s.nspname OPERATOR(pg_catalog.=) $1"
              " AND x.stxname OPERATOR(pg_catalog.=) $2)::pg_catalog.text";
    for (int n = 1;; ++n) {
        const std::string candidate = core::identifier_with_suffix(name, stem + std::to_string(n));
        auto taken = spi.query(taken_sql, {Param::of_text(schema), Param::of_text(candidate)});
        if (text(taken.rows.at(0), 0) == "false")
            return candidate;
    }
}

void in_tablespace(const std::string& tablespace, const std::function<void()>& fn)
{
    pg::with_settings({{"default_tablespace", tablespace.c_str()}}, fn);
}

void move_index_to(pg::SpiSession& spi, const std::string& qualified_index, const std::string& current,
                   const std::string& tablespace)
{
    if (current == tablespace)
        return;
    spi.execute("ALTER INDEX " + qualified_index + " SET TABLESPACE " +
                pg::quote_ident(tablespace.empty() ? "pg_default" : tablespace));
}

std::vector<LocalIndex> carry_local_indexes(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    const QueryResult old = own_indexes(spi, part.rel.oid);
    if (old.rows.empty())
        return {};
    const QueryResult mine = own_indexes(spi, staging.oid);
    const std::vector<std::string> parents = parent_index_shapes(spi, part);
    std::vector<std::pair<std::string, const pg::Row*>> existing;  // shape, row on the staging table
    for (const auto& row : mine.rows) {
        std::string shape = index_shape(row, staging.qualified);
        if (std::find(parents.begin(), parents.end(), shape) == parents.end())
            existing.emplace_back(std::move(shape), &row);
    }
    std::vector<LocalIndex> out;
    for (const auto& row : old.rows) {
        const std::string old_name = text(row, 0);
        const std::string tablespace = text(row, 4);
        const std::string shape = index_shape(row, part.rel.qualified);
        if (shape.empty())
            throw UserError(
                sqlstate::kFeatureNotSupported,
                "cannot rebuild index \"" + old_name + "\" of " + part.rel.display + " on the staging table",
                "Its definition is: " + text(row, 1),
                "Build it on the staging table yourself before the swap, or use overwrite_partition's "
                "mode => 'rewrite'.");
        auto same = std::find_if(existing.begin(), existing.end(), [&](const auto& e) { return e.first == shape; });
        if (same != existing.end()) {
            const std::string name = text(*same->second, 0);
            move_index_to(spi, pg::quote_ident(staging.schema) + "." + pg::quote_ident(name), text(*same->second, 4),
                          tablespace);
            out.push_back({old_name, name});
            existing.erase(same);
            continue;
        }
        const std::string name = free_name(spi, staging.schema, old_name, "__swap_");
        in_tablespace(tablespace, [&] { spi.execute(build_on_staging(row, part, staging, name)); });
        out.push_back({old_name, name});
    }
    return out;
}

std::vector<std::string> local_index_names(pg::SpiSession& spi, std::uint32_t partition)
{
    std::vector<std::string> names;
    for (const auto& row : own_indexes(spi, partition).rows)
        names.push_back(text(row, 0));
    return names;
}

std::map<std::string, std::string> attached_index_tablespaces(pg::SpiSession& spi, std::uint32_t partition)
{
    auto r = spi.query(
        "SELECT h.inhparent::pg_catalog.text, COALESCE((SELECT t.spcname::pg_catalog.text FROM pg_catalog.pg_tablespace t"
        "   WHERE t.oid OPERATOR(pg_catalog.=) c.reltablespace), '')"
        " FROM pg_catalog.pg_index i"
        " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid"
        " JOIN pg_catalog.pg_inherits h ON h.inhrelid OPERATOR(pg_catalog.=) i.indexrelid"
        " WHERE i.indrelid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(partition)});
    std::map<std::string, std::string> out;
    for (const auto& row : r.rows)
        out[text(row, 0)] = text(row, 1);
    return out;
}

void carry_column_statistics(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    // attstattarget: -1 for the default up to PostgreSQL 16, NULL from 17.
    // pg_attver is not an option but a back branch's attribute version
    // (pg_attribute.h: ATTRIBUTE_VERSION_ATTOPTION), which the server keeps
    // itself.
    auto r = spi.query(
        "SELECT pg_catalog.quote_ident(a.attname::pg_catalog.text),"
        " CASE WHEN a.attstattarget IS NOT NULL AND a.attstattarget OPERATOR(pg_catalog.<>) -1"
        "  THEN a.attstattarget::pg_catalog.text END, " +
            core::option_list_sql("a.attoptions", "NOT pg_catalog.starts_with(o, 'pg_attver=')") +
            " FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $1"
            " AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped"
            " AND ((a.attstattarget IS NOT NULL AND a.attstattarget OPERATOR(pg_catalog.<>) -1) OR a.attoptions IS NOT NULL)"
            " ORDER BY a.attnum",
        {Param::of_oid(part.rel.oid)});
    for (const auto& row : r.rows) {
        const std::string column = "ALTER TABLE " + staging.qualified + " ALTER COLUMN " + text(row, 0);
        if (row.at(1))
            spi.execute(column + " SET STATISTICS " + text(row, 1));
        if (row.at(2))
            spi.execute(column + " SET (" + text(row, 2) + ")");
    }
}

}  // namespace pg_idempotent
