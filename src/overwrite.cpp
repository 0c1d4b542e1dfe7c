#include "overwrite.hpp"

#include "core/sql_text.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/identity.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// Advisory lock class for "this unit of work is being overwritten": the
// second key is the relation's OID. Transaction-scoped, released at commit.
constexpr int kUnitLockClass = 0x1DE0;

std::string display(const pg::Relation& r) { return r.schema + "." + r.name; }

// The query's rows as the target would store them: its columns mapped by
// position onto the target's (as INSERT INTO t SELECT does) and cast to
// their types, named as the target's columns so a predicate over the
// target's columns can be evaluated on them.
std::string converted_rows(const pg::Relation& target, const std::string& query)
{
    std::vector<pg::Column> writable;
    for (const auto& c : target.columns)
        if (c.generated == '\0')
            writable.push_back(c);
    const auto cols = pg::describe_query(query);
    if (cols.size() != writable.size())
        throw UserError(sqlstate::kDatatypeMismatch,
                        "the query returns " + std::to_string(cols.size()) + " columns and \"" + display(target) +
                            "\" has " + std::to_string(writable.size()),
                        "Columns map by position, as in INSERT INTO t SELECT ...; every (non-generated) column needs a value.");
    std::vector<std::string> exprs;
    for (std::size_t i = 0; i < cols.size(); ++i) {
        if (!pg::can_assign(cols[i].type_oid, writable[i].type_oid))
            throw UserError(sqlstate::kDatatypeMismatch,
                            "column " + std::to_string(i + 1) + " of the query is " + cols[i].type_name + " and \"" +
                                writable[i].name + "\" is " + writable[i].type_name,
                            {}, "Cast the column in the query.");
        exprs.push_back("CAST(q." + pg::quote_ident(cols[i].name) + " AS " + writable[i].qualified_type + ") AS " +
                        pg::quote_ident(writable[i].name));
    }
    return "SELECT " + core::join(exprs) + " FROM (" + query + "\n) AS q";
}

// SELECT <the non-generated columns, in the target's order> FROM rel: the
// stored side of the "same rows" comparison, shaped like converted_rows.
std::string stored_rows(const pg::Relation& shape, const std::string& qualified_relation)
{
    std::vector<std::string> names;
    for (const auto& c : shape.columns)
        if (c.generated == '\0')
            names.push_back(pg::quote_ident(c.name));
    return core::select_columns(names, qualified_relation);
}

std::string insert_columns(const pg::Relation& target)
{
    std::vector<std::string> names;
    for (const auto& c : target.columns)
        if (c.generated == '\0')
            names.push_back(pg::quote_ident(c.name));
    return core::join(names);
}

void lock_unit(pg::SpiSession& spi, std::uint32_t oid, const std::optional<std::string>& lock_timeout,
               const std::string& what)
{
    auto take = [&] {
        spi.query("SELECT pg_catalog.pg_advisory_xact_lock($1::pg_catalog.int4, $2::pg_catalog.oid::pg_catalog.int4)",
                  {Param::of_int4(kUnitLockClass), Param::of_oid(oid)});
    };
    if (!lock_timeout) {
        take();
        return;
    }
    const std::string setting = pg::lock_timeout_setting(spi, *lock_timeout);
    try {
        pg::with_lock_timeout(setting, take);
    } catch (pg::PgError& e) {
        if (pg::error_sqlstate(e) != sqlstate::kLockNotAvailable)
            throw;
        throw UserError(sqlstate::kLockNotAvailable, what + " is being overwritten by another transaction",
                        "lock_timeout (" + *lock_timeout + ") passed; nothing was changed.");
    }
}

std::int64_t count_of(pg::SpiSession& spi, const std::string& sql)
{
    auto r = spi.query("SELECT pg_catalog.count(*)::pg_catalog.text FROM (" + sql + ") AS c");
    return std::stoll(r.rows.at(0).at(0).value_or("0"));
}

}  // namespace

void replace_where(FunctionCallInfoBaseData* fcinfo, std::uint32_t target_oid, const std::string& predicate,
                   const std::string& query, const std::optional<std::string>& lock_timeout)
{
    if (predicate.find_first_not_of(" \t\r\n") == std::string::npos)
        throw UserError(sqlstate::kInvalidParameterValue, "predicate must not be empty",
                        {}, "Pass the condition that selects the unit of work, e.g. day = '2024-07-07'.");
    pg::SpiSession spi;
    const pg::Relation target = pg::describe_relation(target_oid);
    if (target.kind != 'r' && target.kind != 'p')
        throw UserError(sqlstate::kWrongObjectType, "\"" + display(target) + "\" is not a table");
    // Serialize overwrites of this table: a concurrent rerun waits, then sees
    // the first one's rows and finds nothing to change.
    lock_unit(spi, target_oid, lock_timeout, "\"" + display(target) + "\"");

    const std::string rows = converted_rows(target, query);
    const std::string unit = stored_rows(target, target.qualified) + " WHERE (" + predicate + "\n)";
    const std::string rows_named = "SELECT * FROM (" + rows + ") AS " + pg::quote_ident(target.name);
    // Every new row must belong to the unit it replaces.
    const std::int64_t outside = count_of(spi, rows_named + " WHERE NOT COALESCE((" + predicate + "\n), false)");
    if (outside > 0)
        throw UserError("23514",
                        std::to_string(outside) + " rows of the query do not satisfy the predicate of \"" +
                            display(target) + "\"",
                        "The predicate was: " + predicate,
                        "Every inserted row must belong to the unit of work it replaces; nothing was changed.");
    // The same rows (as stored) already there: write nothing at all.
    if (spi.digest_rows(unit).text() == spi.digest_rows(rows).text()) {
        spi.return_rows(fcinfo, "SELECT 0::pg_catalog.int8, 0::pg_catalog.int8");
        spi.finish();
        return;
    }
    const std::uint64_t deleted = spi.execute("DELETE FROM " + target.qualified + " WHERE (" + predicate + "\n)");
    const std::uint64_t inserted =
        spi.execute("INSERT INTO " + target.qualified + " (" + insert_columns(target) + ") " + rows);
    spi.return_rows(fcinfo, "SELECT $1::pg_catalog.int8, $2::pg_catalog.int8",
                    {Param::of_int8(static_cast<std::int64_t>(deleted)), Param::of_int8(static_cast<std::int64_t>(inserted))});
    spi.finish();
}

void overwrite_partition(FunctionCallInfoBaseData* fcinfo, std::uint32_t parent_oid, const pg::TypedValue& value,
                         const std::optional<std::string>& value_text, const std::string& query,
                         const std::string& mode, bool keep_old, const std::optional<std::string>& lock_timeout)
{
    if (mode != "rewrite" && mode != "swap")
        throw UserError(sqlstate::kInvalidParameterValue, "mode must be 'rewrite' or 'swap', not '" + mode + "'");
    pg::SpiSession spi;
    const pg::Relation parent = pg::describe_relation(parent_oid);
    if (parent.kind != 'p')
        throw UserError(sqlstate::kWrongObjectType, "\"" + display(parent) + "\" is not a partitioned table",
                        {}, "For a table that is not partitioned, use idem.replace_where.");
    // The partition key: one plain column (multi-column keys go through
    // swap_partition).
    auto key = spi.query("SELECT pt.partnatts::pg_catalog.text, a.attname::pg_catalog.text,"
                         " a.atttypid::pg_catalog.text, pt.partdefid::pg_catalog.text"
                         " FROM pg_catalog.pg_partitioned_table pt"
                         " LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) pt.partrelid"
                         "  AND a.attnum OPERATOR(pg_catalog.=) pt.partattrs[0]"
                         " WHERE pt.partrelid OPERATOR(pg_catalog.=) $1",
                         {Param::of_oid(parent_oid)});
    const auto& krow = key.rows.at(0);
    if (krow[0] != std::optional<std::string>("1") || !krow[1])
        throw UserError("0A000", "overwrite_partition needs a partition key of one column",
                        "\"" + display(parent) + "\" is partitioned on several columns or an expression.",
                        "Build the partition yourself and use idem.swap_partition.");
    const std::string key_column = *krow[1];
    const auto key_type = static_cast<std::uint32_t>(std::stoul(krow[2].value_or("0")));
    const std::string default_part = krow[3].value_or("0");

    // The value as the key's type (the text overload casts, as the caller).
    Param key_param = Param::of_value(value);
    if (value_text) {
        key_param = Param::of_text(*value_text);
    } else if (value.is_null) {
        throw UserError(sqlstate::kNullValueNotAllowed, "value must not be NULL");
    }
    const std::string key_cast = "$1::" + pg::type_qualified(key_type);
    if (!value_text && value.type != key_type && !pg::can_assign(value.type, key_type))
        throw UserError(sqlstate::kDatatypeMismatch,
                        "value is " + pg::type_display(value.type) + " and the partition key \"" + key_column + "\" is " +
                            pg::type_display(key_type));

    // The partition whose bound holds the value: each partition's constraint
    // (as PostgreSQL deparses it) evaluated on the value alone.
    auto parts = spi.query("SELECT c.oid::pg_catalog.text, pg_catalog.pg_get_partition_constraintdef(c.oid)"
                           " FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid"
                           " WHERE i.inhparent OPERATOR(pg_catalog.=) $1 ORDER BY c.oid",
                           {Param::of_oid(parent_oid)});
    std::optional<std::uint32_t> partition;
    std::string constraint;
    bool default_takes_it = false;
    for (const auto& p : parts.rows) {
        if (!p[1])
            continue;
        auto hit = spi.query("SELECT EXISTS (SELECT FROM (SELECT " + key_cast + " AS " + pg::quote_ident(key_column) +
                                 ") AS k WHERE " + *p[1] + ")::pg_catalog.text",
                             {key_param});
        if (hit.rows.at(0).at(0) != std::optional<std::string>("true"))
            continue;
        if (p[0] == std::optional<std::string>(default_part)) {
            default_takes_it = true;
            continue;
        }
        partition = static_cast<std::uint32_t>(std::stoul(p[0].value_or("0")));
        constraint = *p[1];
    }
    if (!partition) {
        auto shown = spi.query("SELECT " + key_cast + "::pg_catalog.text", {key_param});
        throw UserError("23514",
                        "no partition of \"" + display(parent) + "\" holds " + key_column + " = " +
                            shown.rows.at(0).at(0).value_or("NULL") +
                            (default_takes_it ? " (only the DEFAULT partition would take it)" : ""),
                        {}, "Create the partition first: CREATE TABLE ... PARTITION OF " + parent.qualified + " FOR VALUES ...");
    }
    const pg::Relation part = pg::describe_relation(*partition);
    auto sub = spi.query("SELECT c.relkind::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
                         {Param::of_oid(*partition)});
    if (sub.rows.at(0).at(0) == std::optional<std::string>("p"))
        throw UserError("0A000", "partition \"" + display(part) + "\" is itself partitioned",
                        {}, "Overwrite its own partitions.");
    if (mode == "swap")
        throw UserError("0A000", "mode 'swap' is not available in this version",
                        "idem.swap_partition is not built yet; mode 'rewrite' overwrites the partition in place.",
                        "Use mode => 'rewrite'.");
    (void)keep_old;

    // One overwrite of a partition at a time.
    lock_unit(spi, *partition, lock_timeout, "partition \"" + display(part) + "\"");

    const std::string rows = converted_rows(parent, query);
    const std::int64_t outside =
        count_of(spi, "SELECT * FROM (" + rows + ") AS k WHERE NOT COALESCE((" + constraint + "), false)");
    if (outside > 0)
        throw UserError("23514",
                        std::to_string(outside) + " rows of the query fall outside partition \"" + display(part) + "\"",
                        "Its bound is: " + constraint,
                        "Every row must belong to the partition it overwrites; nothing was changed.");

    // The same rows already there: nothing is written at all.
    const core::MultisetDigest now = spi.digest_rows(stored_rows(parent, part.qualified));
    if (now.text() == spi.digest_rows(rows).text()) {
        spi.return_rows(fcinfo, "SELECT 'skipped'::pg_catalog.text, $1::pg_catalog.int8",
                        {Param::of_int8(static_cast<std::int64_t>(now.count()))});
        spi.finish();
        return;
    }
    spi.execute("DELETE FROM " + part.qualified);
    const std::uint64_t inserted =
        spi.execute("INSERT INTO " + part.qualified + " (" + insert_columns(parent) + ") " + rows);
    spi.return_rows(fcinfo, "SELECT 'rewritten'::pg_catalog.text, $1::pg_catalog.int8",
                    {Param::of_int8(static_cast<std::int64_t>(inserted))});
    spi.finish();
}

}  // namespace pg_idempotent
