#include "overwrite/storage_swap.hpp"

#include <vector>

#include "core/sql_text.hpp"
#include "overwrite/swap_partition.hpp"
#include "pg/errors.hpp"
#include "pg/relation_storage.hpp"
#include "pg/transactions.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::QueryResult;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

const char* const kNothingChanged = "Every row must satisfy the partition's constraints; nothing was changed.";

std::string cell(const QueryResult& r, std::size_t row, std::size_t col)
{
    return r.rows.at(row).at(col).value_or("");
}

// Catalog expressions (generation, CHECK, foreign keys) deparsed under the
// canonical settings, like the bound (partitions.hpp).
QueryResult deparse(pg::SpiSession& spi, const std::string& sql, std::uint32_t rel)
{
    QueryResult r;
    pg::with_canonical_settings([&] { r = spi.query(sql, {Param::of_oid(rel)}); });
    return r;
}

// Per attnum: dropped, name, type, COLLATE clause, NOT NULL, generation
// clause, SET STORAGE and SET COMPRESSION keywords ("" when the type's own).
QueryResult column_layout(pg::SpiSession& spi, std::uint32_t rel)
{
    return deparse(
        spi,
        "SELECT a.attisdropped::pg_catalog.text, a.attnum::pg_catalog.text,"
        " pg_catalog.quote_ident(a.attname), pg_catalog.format_type(a.atttypid, a.atttypmod),"
        " COALESCE((SELECT ' COLLATE ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(n.nspname)"
        "   OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(co.collname)"
        "   FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) co.collnamespace"
        "   WHERE co.oid OPERATOR(pg_catalog.=) a.attcollation), ''),"
        " a.attnotnull::pg_catalog.text,"
        " CASE WHEN a.attgenerated OPERATOR(pg_catalog.<>) '' THEN"
        "   ' GENERATED ALWAYS AS (' OPERATOR(pg_catalog.||) (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid)"
        "     FROM pg_catalog.pg_attrdef d WHERE d.adrelid OPERATOR(pg_catalog.=) a.attrelid"
        "     AND d.adnum OPERATOR(pg_catalog.=) a.attnum)"
        "   OPERATOR(pg_catalog.||) CASE a.attgenerated WHEN 's' THEN ') STORED' ELSE ') VIRTUAL' END"
        " ELSE '' END,"
        " CASE WHEN a.attstorage OPERATOR(pg_catalog.=) t.typstorage THEN '' ELSE CASE a.attstorage"
        "   WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL' WHEN 'm' THEN 'MAIN' ELSE 'EXTENDED' END END,"
        " CASE a.attcompression WHEN 'p' THEN 'pglz' WHEN 'l' THEN 'lz4' ELSE '' END"
        " FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) a.atttypid"
        " WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attnum OPERATOR(pg_catalog.>) 0 ORDER BY a.attnum",
        rel);
}

// Every CHECK of the partition (a NOT VALID one too: it binds new rows) and
// its bound, counted over the staging table in one scan, in the caller's
// settings as an INSERT into the partition would evaluate them. A NULL
// result passes, as it does for a CHECK.
void check_rows(pg::SpiSession& spi, const Partition& part, const std::string& staging, const std::string& rows_are)
{
    const auto checks = deparse(spi,
                                "SELECT c.conname::pg_catalog.text, pg_catalog.pg_get_expr(c.conbin, c.conrelid)"
                                " FROM pg_catalog.pg_constraint c WHERE c.conrelid OPERATOR(pg_catalog.=) $1"
                                " AND c.contype OPERATOR(pg_catalog.=) 'c' ORDER BY c.oid",
                                part.rel.oid);
    auto violating = [](const std::string& expression) {
        return "pg_catalog.count(*) FILTER (WHERE (" + expression + ") IS FALSE)::pg_catalog.text";
    };
    std::string sql = "SELECT " + violating(part.constraint);
    for (const auto& row : checks.rows)
        sql += ", " + violating(row.at(1).value_or("true"));
    const auto counts = spi.query(sql + " FROM " + staging);
    if (cell(counts, 0, 0) != "0")
        throw rows_outside(part, cell(counts, 0, 0), rows_are);
    for (std::size_t i = 0; i < checks.rows.size(); ++i) {
        const std::string n = cell(counts, 0, i + 1);
        if (n != "0")
            throw UserError(sqlstate::kCheckViolation,
                            n + " rows of " + rows_are + " violate check constraint \"" + cell(checks, i, 0) +
                                "\" of partition \"" + part.rel.display + "\"",
                            "Its expression is: " + cell(checks, i, 1), kNothingChanged);
    }
}

// The partition's foreign keys (inherited or its own, NOT VALID ones too)
// added to the staging table, which makes PostgreSQL check every row
// against the referenced tables; they go with the staging table.
void check_foreign_keys(pg::SpiSession& spi, const Partition& part, const std::string& staging,
                        const std::string& rows_are)
{
    const auto keys = deparse(spi,
                              "SELECT c.conname::pg_catalog.text, pg_catalog.pg_get_constraintdef(c.oid),"
                              " c.convalidated::pg_catalog.text FROM pg_catalog.pg_constraint c"
                              " WHERE c.conrelid OPERATOR(pg_catalog.=) $1 AND c.contype OPERATOR(pg_catalog.=) 'f'"
                              " ORDER BY c.oid",
                              part.rel.oid);
    const std::string not_valid = " NOT VALID";
    for (const auto& row : keys.rows) {
        const std::string name = row.at(0).value_or("");
        std::string definition = row.at(1).value_or("");
        if (row.at(2).value_or("") != "true" && definition.size() > not_valid.size() &&
            definition.compare(definition.size() - not_valid.size(), not_valid.size(), not_valid) == 0)
            definition.resize(definition.size() - not_valid.size());
        const auto failed = pg::try_in_subtransaction([&] {
            spi.execute("ALTER TABLE " + staging + " ADD CONSTRAINT " + pg::quote_ident(name) + " " + definition);
        });
        if (!failed)
            continue;
        if (pg::error_sqlstate(*failed) != sqlstate::kForeignKeyViolation)
            throw *failed;
        throw UserError(sqlstate::kForeignKeyViolation,
                        "rows of " + rows_are + " violate foreign key constraint \"" + name + "\" of partition \"" +
                            part.rel.display + "\"",
                        pg::error_detail(*failed), kNothingChanged);
    }
}

// The storage swapped in, the partition's indexes rebuilt; a key that two
// new rows share (or an exclusion they break) is PostgreSQL's error, told as
// the other constraints' are.
void replace_storage(const Partition& part, std::uint32_t staging)
{
    const auto failed = pg::try_in_subtransaction([&] { pg::replace_storage(part.rel.oid, staging); });
    if (!failed)
        return;
    const std::string code = pg::error_sqlstate(*failed);
    if (code != sqlstate::kUniqueViolation && code != sqlstate::kExclusionViolation)
        throw *failed;
    throw UserError(code == sqlstate::kUniqueViolation ? sqlstate::kUniqueViolation : sqlstate::kExclusionViolation,
                    pg::error_message(*failed) + " of partition \"" + part.rel.display + "\"",
                    pg::error_detail(*failed), kNothingChanged);
}

}  // namespace

std::uint32_t create_storage_staging(pg::SpiSession& spi, const Partition& part, const std::string& qualified,
                                     const std::string& tablespace_clause)
{
    const auto layout = column_layout(spi, part.rel.oid);
    std::vector<std::string> columns;
    std::vector<std::string> alter;
    for (const auto& row : layout.rows) {
        if (row.at(0).value_or("") == "true") {
            // Any type does: a dropped column is NULL in every row written.
            const std::string name = "idem_dropped_" + row.at(1).value_or("");
            columns.push_back(name + " pg_catalog.int4");
            alter.push_back("DROP COLUMN " + name);
            continue;
        }
        const std::string name = row.at(2).value_or("");
        columns.push_back(name + " " + row.at(3).value_or("") + row.at(4).value_or("") +
                          (row.at(5).value_or("") == "true" ? " NOT NULL" : "") + row.at(6).value_or(""));
        if (!row.at(7).value_or("").empty())
            alter.push_back("ALTER COLUMN " + name + " SET STORAGE " + *row.at(7));
        if (!row.at(8).value_or("").empty())
            alter.push_back("ALTER COLUMN " + name + " SET COMPRESSION " + *row.at(8));
    }
    // A temporary partition's schema is this session's pg_temp: the staging
    // table is temporary too.
    spi.execute(std::string("CREATE ") + (part.persistence == 'u' ? "UNLOGGED " : "") + "TABLE " + qualified + " (" +
                core::join(columns) + ")" + tablespace_clause);
    if (!alter.empty())
        spi.execute("ALTER TABLE " + qualified + " " + core::join(alter));
    auto oid =
        spi.query("SELECT $1::pg_catalog.regclass::pg_catalog.oid::pg_catalog.text", {Param::of_text(qualified)});
    return static_cast<std::uint32_t>(std::stoul(cell(oid, 0, 0)));
}

void swap_storage_into(pg::SpiSession& spi, const Partition& part, std::uint32_t staging,
                       const std::optional<std::string>& lock_timeout, const std::string& rows_are)
{
    const pg::Relation table = pg::describe_relation(staging, pg::RelationLock::kNone);  // ours, locked
    check_rows(spi, part, table.qualified, rows_are);
    with_lock_budget(
        spi, lock_timeout,
        "a table a foreign key of \"" + part.rel.display + "\" references is in use by another transaction",
        [&] { check_foreign_keys(spi, part, table.qualified, rows_are); });
    with_lock_budget(spi, lock_timeout, "partition \"" + part.rel.display + "\" is in use by another transaction",
                     [&] { spi.execute("LOCK TABLE ONLY " + part.rel.qualified + " IN ACCESS EXCLUSIVE MODE"); });
    replace_storage(part, staging);
}

}  // namespace pg_idempotent
