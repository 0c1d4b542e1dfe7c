#include "overwrite/swap_partition.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "common/installed_sql.hpp"
#include "common/run_history.hpp"
#include "core/sql_text.hpp"
#include "overwrite/swap_indexes.hpp"
#include "overwrite/swap_losses.hpp"
#include "overwrite/swap_publications.hpp"
#include "overwrite/swap_statistics.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/transactions.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::QueryResult;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// The CHECK constraint equal to the bound that lets ATTACH skip its
// validation scan; dropped again once the table is attached (the partition
// constraint does its job from then on).
const char* const kBoundCheck = "idem_swap_bound";

std::string cell(const QueryResult& r, std::size_t row = 0, std::size_t col = 0)
{
    return r.rows.at(row).at(col).value_or("");
}

std::uint32_t oid_of(const std::optional<std::string>& s)
{
    return static_cast<std::uint32_t>(std::stoul(s.value_or("0")));
}

// Catalog text that may hold literals (bounds, CHECK and policy expressions)
// is deparsed under the canonical settings: see partitions.hpp.
QueryResult deparse(pg::SpiSession& spi, const std::string& sql, const pg::Params& params)
{
    QueryResult r;
    pg::with_canonical_settings([&] { r = spi.query(sql, params); });
    return r;
}

// ---------------------------------------------------------------------------
// Validation: nothing here writes or takes a lock on the parent.

void check_shapes(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    if (staging.oid == part.rel.oid)
        throw UserError(sqlstate::kInvalidParameterValue, "the staging table is the partition itself", {},
                        "Build the new rows in another table, then swap that one in.");
    if (staging.kind == 'p')
        throw UserError(sqlstate::kFeatureNotSupported, "staging table \"" + staging.display + "\" is partitioned", {},
                        "Swap a plain table in; to replace a sub-partitioned partition, swap its own partitions.");
    if (staging.kind != 'r')
        throw UserError(
            sqlstate::kWrongObjectType, "\"" + staging.display + "\" is not a table", {},
            "Build the new rows in a plain table (CREATE TABLE ... (LIKE parent INCLUDING ALL)) and swap it in.");
    if (part.partitioned)
        throw UserError(sqlstate::kFeatureNotSupported, "partition \"" + part.rel.display + "\" is itself partitioned",
                        "swap_partition replaces a leaf partition.", "Swap its own partitions one by one.");
    auto r = spi.query(
        "SELECT c.relpersistence::pg_catalog.text, c.relispartition::pg_catalog.text,"
        " (SELECT i.inhparent::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_inherits i"
        "   WHERE i.inhrelid OPERATOR(pg_catalog.=) c.oid LIMIT 1),"
        " EXISTS (SELECT FROM pg_catalog.pg_inherits i WHERE i.inhparent OPERATOR(pg_catalog.=) c.oid)::pg_catalog.text"
        " FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(staging.oid)});
    if (cell(r, 0, 1) == "true")
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "staging table \"" + staging.display + "\" is already a partition of " + cell(r, 0, 2), {},
                        "Swap in a table that belongs to no partitioned table.");
    if (!cell(r, 0, 2).empty() || cell(r, 0, 3) == "true")
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "staging table \"" + staging.display + "\" takes part in table inheritance", {},
                        "A partition cannot inherit from, or be inherited by, other tables.");
    const char mine = cell(r).empty() ? 'p' : cell(r).at(0);
    if (mine != part.persistence) {
        auto name = [](char p) { return p == 'u' ? std::string("unlogged") : p == 't' ? "temporary" : "permanent"; };
        throw UserError(
            sqlstate::kWrongObjectType,
            "staging table \"" + staging.display + "\" is " + name(mine) + " and partition \"" + part.rel.display +
                "\" is " + name(part.persistence),
            {}, mine == 'u' ? "ALTER TABLE ... SET LOGGED first, or build the staging table as the partition is." : "");
    }
}

struct ColumnShape {
    std::string type;       // format_type, with typmod
    std::string collation;  // collation name, "" for none
    bool not_null = false;
    std::string generated;  // the generation expression, "" for a plain column
};

std::map<std::string, ColumnShape> column_shapes(pg::SpiSession& spi, std::uint32_t rel)
{
    auto r =
        deparse(spi,
                "SELECT a.attname::pg_catalog.text, pg_catalog.format_type(a.atttypid, a.atttypmod),"
                " COALESCE((SELECT co.collname::pg_catalog.text FROM pg_catalog.pg_collation co"
                "   WHERE co.oid OPERATOR(pg_catalog.=) a.attcollation), ''),"
                " a.attnotnull::pg_catalog.text,"
                " CASE WHEN a.attgenerated OPERATOR(pg_catalog.<>) '' THEN"
                "   (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attrdef d"
                "     WHERE d.adrelid OPERATOR(pg_catalog.=) a.attrelid AND d.adnum OPERATOR(pg_catalog.=) a.attnum)"
                " ELSE '' END"
                " FROM pg_catalog.pg_attribute a"
                " WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attnum OPERATOR(pg_catalog.>) 0"
                " AND NOT a.attisdropped",
                {Param::of_oid(rel)});
    std::map<std::string, ColumnShape> out;
    for (const auto& row : r.rows)
        out[row[0].value_or("")] = ColumnShape{row[1].value_or(""), row[2].value_or(""),
                                               row[3] == std::optional<std::string>("true"), row[4].value_or("")};
    return out;
}

// Identical live columns, matched by name as ATTACH matches them (dropped
// columns on either side do not matter: PostgreSQL converts tuples).
void check_columns(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    const auto want = column_shapes(spi, part.rel.oid);
    const auto have = column_shapes(spi, staging.oid);
    std::vector<std::string> problems;
    for (const auto& [name, w] : want) {
        auto it = have.find(name);
        if (it == have.end()) {
            problems.push_back("column \"" + name + "\" is missing");
            continue;
        }
        const ColumnShape& h = it->second;
        if (h.type != w.type)
            problems.push_back("column \"" + name + "\" is " + h.type + ", not " + w.type);
        else if (h.collation != w.collation)
            problems.push_back("column \"" + name + "\" has collation \"" + h.collation + "\", not \"" + w.collation +
                               "\"");
        if (h.not_null != w.not_null)
            problems.push_back("column \"" + name + "\" is " + (h.not_null ? "NOT NULL" : "nullable") +
                               ", the partition's is " + (w.not_null ? "NOT NULL" : "nullable"));
        if (h.generated != w.generated)
            problems.push_back(
                "column \"" + name + "\" is " +
                (h.generated.empty() ? std::string("not generated") : "GENERATED ALWAYS AS (" + h.generated + ")") +
                ", the partition's is " +
                (w.generated.empty() ? std::string("not generated") : "GENERATED ALWAYS AS (" + w.generated + ")"));
    }
    for (const auto& [name, h] : have)
        if (want.find(name) == want.end())
            problems.push_back("column \"" + name + "\" is not in the partition");
    if (!problems.empty())
        throw UserError(sqlstate::kDatatypeMismatch,
                        "staging table \"" + staging.display + "\" does not match partition \"" + part.rel.display +
                            "\": " + problems.front(),
                        problems.size() > 1 ? "All differences: " + core::join(problems, "; ") + "." : std::string(),
                        "Build the staging table as CREATE TABLE ... (LIKE " + part.rel.qualified +
                            " INCLUDING DEFAULTS INCLUDING GENERATED).");
}

// Rows for this bound sitting in the DEFAULT partition: impossible while the
// partition exists, unless the catalog changed under us; refused either way,
// as ATTACH would refuse it later under the parent lock.
void check_default_partition(pg::SpiSession& spi, const Partition& part)
{
    if (part.is_default || part.constraint == "true")
        return;
    auto d = spi.query(
        "SELECT pt.partdefid::pg_catalog.text FROM pg_catalog.pg_partitioned_table pt"
        " WHERE pt.partrelid OPERATOR(pg_catalog.=) $1 AND pt.partdefid OPERATOR(pg_catalog.<>) 0",
        {Param::of_oid(part.parent)});
    if (d.rows.empty())
        return;
    const pg::Relation def = pg::describe_relation(oid_of(d.rows[0][0]));
    auto n = spi.query("SELECT pg_catalog.count(*)::pg_catalog.text FROM " + def.qualified + " WHERE (" +
                       part.constraint + ")");
    if (cell(n) != "0")
        throw UserError(sqlstate::kCheckViolation,
                        cell(n) + " rows for the bound of partition \"" + part.rel.display +
                            "\" sit in the DEFAULT partition \"" + def.display + "\"",
                        "The bound is: " + part.bound,
                        "Move them out of the DEFAULT partition first; nothing was changed.");
}

// ---------------------------------------------------------------------------
// Building on the staging table, before the parent is locked.

// The CHECK equal to the bound. One scan of the staging table; when rows fall
// outside, a second one counts them for the message (partitions.hpp).
bool add_bound_check(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging,
                     const std::string& rows_are)
{
    if (part.constraint == "true")
        return false;
    const std::string add =
        "ALTER TABLE " + staging.qualified + " ADD CONSTRAINT " + kBoundCheck + " CHECK (" + part.constraint + ")";
    auto failed = pg::try_in_subtransaction([&] { spi.execute(add); });
    if (!failed)
        return true;
    if (pg::error_sqlstate(*failed) != sqlstate::kCheckViolation)
        throw *failed;
    throw_rows_outside(spi, part, "SELECT * FROM " + staging.qualified, {}, rows_are, *failed);
}

// The parent's CHECK constraints (ATTACH requires them, by name).
void add_parent_checks(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    auto r = deparse(spi,
                     "SELECT p.conname::pg_catalog.text, pg_catalog.pg_get_constraintdef(p.oid)"
                     " FROM pg_catalog.pg_constraint p"
                     " WHERE p.conrelid OPERATOR(pg_catalog.=) $1 AND p.contype OPERATOR(pg_catalog.=) 'c'"
                     " AND NOT p.connoinherit AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint s"
                     "   WHERE s.conrelid OPERATOR(pg_catalog.=) $2 AND s.conname OPERATOR(pg_catalog.=) p.conname)"
                     " ORDER BY p.oid",
                     {Param::of_oid(part.parent), Param::of_oid(staging.oid)});
    for (const auto& row : r.rows)
        spi.execute("ALTER TABLE " + staging.qualified + " ADD CONSTRAINT " + pg::quote_ident(row[0].value_or("")) +
                    " " + row[1].value_or(""));
}

// name, pg_get_indexdef, and for a PRIMARY KEY / UNIQUE constraint's index
// its contype and pg_get_constraintdef, of every index on rel; then its OID
// and tablespace ("" = default).
QueryResult index_definitions(pg::SpiSession& spi, std::uint32_t rel)
{
    return deparse(spi,
                   "SELECT ic.relname::pg_catalog.text, pg_catalog.pg_get_indexdef(i.indexrelid),"
                   " con.contype::pg_catalog.text, pg_catalog.pg_get_constraintdef(con.oid),"
                   " i.indexrelid::pg_catalog.text, COALESCE((SELECT t.spcname::pg_catalog.text"
                   "  FROM pg_catalog.pg_tablespace t WHERE t.oid OPERATOR(pg_catalog.=) ic.reltablespace), '')"
                   " FROM pg_catalog.pg_index i"
                   " JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid"
                   " LEFT JOIN pg_catalog.pg_constraint con ON con.conindid OPERATOR(pg_catalog.=) i.indexrelid"
                   "  AND con.conrelid OPERATOR(pg_catalog.=) i.indrelid AND con.contype IN ('p', 'u')"
                   " WHERE i.indrelid OPERATOR(pg_catalog.=) $1 ORDER BY i.indexrelid",
                   {Param::of_oid(rel)});
}

// The parent's partitioned indexes, so ATTACH adopts them instead of
// building under the lock. Constraint indexes (PRIMARY KEY, UNIQUE) must be
// constraints on the staging table too, or ATTACH builds new ones. An
// equivalent index the caller already built is used as it is. Each goes to
// the tablespace of the old partition's index it replaces (0.8.0 built them
// all in the default one).
void add_parent_indexes(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    const auto parent = index_definitions(spi, part.parent);
    const auto mine = index_definitions(spi, staging.oid);
    const auto tablespaces = attached_index_tablespaces(spi, part.rel.oid);
    // What the staging table already has, in the form we would create, and
    // where it is.
    std::vector<std::string> existing;
    std::vector<const pg::Row*> existing_rows;
    for (const auto& row : mine.rows) {
        if (row[2])
            existing.push_back(*row[2] + " " + row[3].value_or(""));
        else
            existing.push_back(core::index_definition_on(row[1].value_or(""), pg::quote_ident(row[0].value_or("")),
                                                         staging.qualified, staging.qualified));
        existing_rows.push_back(&row);
    }
    const std::string parent_deparsed = "ONLY " + part.parent_qualified;
    for (const auto& row : parent.rows) {
        std::string sql;
        std::string same;
        if (row[2]) {
            same = *row[2] + " " + row[3].value_or("");
            sql = "ALTER TABLE " + staging.qualified + " ADD " + row[3].value_or("");
        } else {
            same = sql = core::index_definition_on(row[1].value_or(""), pg::quote_ident(row[0].value_or("")),
                                                   parent_deparsed, staging.qualified);
            if (sql.empty())
                throw UserError(
                    sqlstate::kFeatureNotSupported,
                    "cannot rebuild index \"" + row[0].value_or("") + "\" of " + part.parent_qualified +
                        " on the staging table",
                    "Its definition is: " + row[1].value_or(""),
                    "Create the staging table with CREATE TABLE ... (LIKE parent INCLUDING ALL), or use overwrite_partition's mode => 'rewrite'.");
        }
        const auto ts = tablespaces.find(row[4].value_or(""));
        const std::string tablespace = ts == tablespaces.end() ? std::string() : ts->second;
        const auto found = std::find(existing.begin(), existing.end(), same);
        if (found != existing.end()) {
            const pg::Row* have = existing_rows[static_cast<std::size_t>(found - existing.begin())];
            if (have != nullptr)
                move_index_to(spi, pg::quote_ident(staging.schema) + "." + pg::quote_ident(have->at(0).value_or("")),
                              have->at(5).value_or(""), tablespace);
            continue;
        }
        in_tablespace(tablespace, [&] { spi.execute(sql); });
        existing.push_back(same);
        existing_rows.push_back(nullptr);  // built where it belongs
    }
}

// The parent's foreign keys, under the parent's constraint names (as
// PARTITION OF names them): ATTACH adopts an identical one instead of
// validating a new one under the lock.
void add_parent_foreign_keys(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    auto r = spi.query(
        "SELECT pg_catalog.quote_ident(p.conname), pg_catalog.pg_get_constraintdef(p.oid)"
        " FROM pg_catalog.pg_constraint p"
        " WHERE p.conrelid OPERATOR(pg_catalog.=) $1 AND p.contype OPERATOR(pg_catalog.=) 'f'"
        " AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint s"
        "   WHERE s.conrelid OPERATOR(pg_catalog.=) $2 AND s.contype OPERATOR(pg_catalog.=) 'f'"
        "   AND pg_catalog.pg_get_constraintdef(s.oid) OPERATOR(pg_catalog.=) pg_catalog.pg_get_constraintdef(p.oid))"
        " ORDER BY p.oid",
        {Param::of_oid(part.parent), Param::of_oid(staging.oid)});
    for (const auto& row : r.rows)
        spi.execute("ALTER TABLE " + staging.qualified + " ADD CONSTRAINT " + row[0].value_or("") + " " +
                    row[1].value_or(""));
}

// Runs, in order, the statements an install-script function (function:
// qualified, args: the partition, the staging table and its quoted name)
// returns to give the staging table what the partition has. deparsed: the
// statements hold deparsed expressions (canonical settings).
void run_statements(pg::SpiSession& spi, const std::string& function, const Partition& part,
                    const pg::Relation& staging, bool deparsed)
{
    const std::string sql = "SELECT s FROM " + function +
                            "($1::pg_catalog.oid::pg_catalog.regclass, $2::pg_catalog.oid::pg_catalog.regclass, $3) s";
    const pg::Params params = {Param::of_oid(part.rel.oid), Param::of_oid(staging.oid),
                               Param::of_text(staging.qualified)};
    const QueryResult r = deparsed ? deparse(spi, sql, params) : spi.query(sql, params);
    for (const auto& row : r.rows)
        spi.execute(row[0].value_or(""));
}

// The old partition's own triggers (the parent's are cloned by ATTACH), with
// their enabled state.
void carry_triggers(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    auto r =
        deparse(spi,
                "SELECT t.tgname::pg_catalog.text, pg_catalog.pg_get_triggerdef(t.oid), t.tgenabled::pg_catalog.text"
                " FROM pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 AND NOT t.tgisinternal"
                " AND t.tgparentid OPERATOR(pg_catalog.=) 0 AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger s"
                "   WHERE s.tgrelid OPERATOR(pg_catalog.=) $2 AND s.tgname OPERATOR(pg_catalog.=) t.tgname)"
                " ORDER BY t.oid",
                {Param::of_oid(part.rel.oid), Param::of_oid(staging.oid)});
    for (const auto& row : r.rows) {
        const std::string name = pg::quote_ident(row[0].value_or(""));
        const std::string sql = core::retarget_definition(row[1].value_or(""), part.rel.qualified, staging.qualified);
        if (sql.empty())
            throw UserError(sqlstate::kFeatureNotSupported,
                            "cannot carry trigger " + name + " of \"" + part.rel.display + "\" over",
                            "Its definition is: " + row[1].value_or(""), "Create it on the staging table yourself.");
        spi.execute(sql);
        const std::string enabled = row[2].value_or("O");
        if (enabled == "D")
            spi.execute("ALTER TABLE " + staging.qualified + " DISABLE TRIGGER " + name);
        else if (enabled == "R")
            spi.execute("ALTER TABLE " + staging.qualified + " ENABLE REPLICA TRIGGER " + name);
        else if (enabled == "A")
            spi.execute("ALTER TABLE " + staging.qualified + " ENABLE ALWAYS TRIGGER " + name);
    }
}

// Row-level security: the partition's policies and its ENABLE / FORCE flags.
void carry_row_security(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    run_statements(spi, "idem._policy_statements", part, staging, true);
    auto flags = spi.query(
        "SELECT o.relrowsecurity::pg_catalog.text, o.relforcerowsecurity::pg_catalog.text,"
        " s.relrowsecurity::pg_catalog.text, s.relforcerowsecurity::pg_catalog.text"
        " FROM pg_catalog.pg_class o, pg_catalog.pg_class s"
        " WHERE o.oid OPERATOR(pg_catalog.=) $1 AND s.oid OPERATOR(pg_catalog.=) $2",
        {Param::of_oid(part.rel.oid), Param::of_oid(staging.oid)});
    if (cell(flags, 0, 0) != cell(flags, 0, 2))
        spi.execute("ALTER TABLE " + staging.qualified + (cell(flags, 0, 0) == "true" ? " ENABLE" : " DISABLE") +
                    " ROW LEVEL SECURITY");
    if (cell(flags, 0, 1) != cell(flags, 0, 3))
        spi.execute("ALTER TABLE " + staging.qualified + (cell(flags, 0, 1) == "true" ? " FORCE" : " NO FORCE") +
                    " ROW LEVEL SECURITY");
}

// Comments on the table and its columns, storage parameters, replica
// identity FULL / NOTHING (USING INDEX is set after ATTACH, see below).
void carry_properties(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    run_statements(spi, "idem._comment_statements", part, staging, false);
    auto props = spi.query("SELECT " + core::option_list_sql("c.reloptions") +
                               ", c.relreplident::pg_catalog.text"
                               " FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
                           {Param::of_oid(part.rel.oid)});
    if (!cell(props, 0, 0).empty())
        spi.execute("ALTER TABLE " + staging.qualified + " SET (" + cell(props, 0, 0) + ")");
    if (cell(props, 0, 1) == "f")
        spi.execute("ALTER TABLE " + staging.qualified + " REPLICA IDENTITY FULL");
    else if (cell(props, 0, 1) == "n")
        spi.execute("ALTER TABLE " + staging.qualified + " REPLICA IDENTITY NOTHING");
}

// The owner, then the privileges: the table's ACL and each column's, made
// equal to the partition's (revoke what the staging table has, grant what
// the partition had; the grantor becomes the owner).
void carry_owner_and_grants(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    auto owner = spi.query(
        "SELECT (o.relowner OPERATOR(pg_catalog.<>) s.relowner)::pg_catalog.text,"
        " pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(o.relowner))"
        " FROM pg_catalog.pg_class o, pg_catalog.pg_class s"
        " WHERE o.oid OPERATOR(pg_catalog.=) $1 AND s.oid OPERATOR(pg_catalog.=) $2",
        {Param::of_oid(part.rel.oid), Param::of_oid(staging.oid)});
    if (cell(owner, 0, 0) == "true")
        spi.execute("ALTER TABLE " + staging.qualified + " OWNER TO " + cell(owner, 0, 1));
    // REVOKEs before GRANTs; the grantor is not compared (it becomes the
    // owner).
    run_statements(spi, "idem._acl_statements", part, staging, false);
}

// ---------------------------------------------------------------------------
// Under the parent lock: catalog work only, so its time does not grow with
// the partition's size (except ATTACH's scan of a DEFAULT partition).

struct PartitionIndex {
    std::string name;
    bool replica_identity = false;  // the partition's REPLICA IDENTITY USING INDEX
};

// Each index of the partition by the parent index it is attached to.
std::map<std::string, PartitionIndex> indexes_by_parent_index(pg::SpiSession& spi, std::uint32_t partition)
{
    auto r = spi.query(
        "SELECT h.inhparent::pg_catalog.text, c.relname::pg_catalog.text,"
        " (i.indisreplident AND (SELECT t.relreplident OPERATOR(pg_catalog.=) 'i' FROM pg_catalog.pg_class t"
        "   WHERE t.oid OPERATOR(pg_catalog.=) i.indrelid))::pg_catalog.text"
        " FROM pg_catalog.pg_index i"
        " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid"
        " JOIN pg_catalog.pg_inherits h ON h.inhrelid OPERATOR(pg_catalog.=) i.indexrelid"
        " WHERE i.indrelid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(partition)});
    std::map<std::string, PartitionIndex> out;
    for (const auto& row : r.rows)
        out[row[0].value_or("")] = PartitionIndex{row[1].value_or(""), row[2] == std::optional<std::string>("true")};
    return out;
}

// What the staging table took over from the old partition under names of
// its own, which become the old names once the old partition is gone.
struct CarriedNames {
    std::vector<LocalIndex> indexes;
    std::vector<CarriedStatistics> statistics;
};

void detach_and_attach(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging, bool keep_old,
                       bool drop_bound_check, const CarriedNames& carried)
{
    // The parent alone: DETACH locks the one partition it takes out, and a
    // recursive LOCK TABLE would wait for every partition's users as well.
    spi.execute("LOCK TABLE ONLY " + part.parent_qualified + " IN ACCESS EXCLUSIVE MODE");
    // The partition as it is now that nothing can change it any more.
    const auto now = describe_partition(spi, part.rel.oid);
    if (!now || now->parent != part.parent || now->bound != part.bound)
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "partition \"" + part.rel.display + "\" changed while the staging table was built", {},
                        "Another transaction detached it or changed its bound; nothing was changed.");
    const auto old_indexes = indexes_by_parent_index(spi, part.rel.oid);
    const auto old_local = local_index_names(spi, part.rel.oid);  // before DETACH unattaches the others

    spi.execute("ALTER TABLE " + part.parent_qualified + " DETACH PARTITION " + part.rel.qualified);
    if (keep_old) {
        // The kept table and its indexes step aside under new names, so the
        // new partition can take over every old name.
        const std::string kept = free_name(spi, part.rel.schema, part.rel.name, "__replaced_");
        spi.execute("ALTER TABLE " + part.rel.qualified + " RENAME TO " + pg::quote_ident(kept));
        std::vector<std::string> names = old_local;
        for (const auto& [parent_index, index] : old_indexes) {
            (void)parent_index;
            names.push_back(index.name);
        }
        for (const auto& name : names)
            spi.execute("ALTER INDEX " + pg::quote_ident(part.rel.schema) + "." + pg::quote_ident(name) +
                        " RENAME TO " + pg::quote_ident(free_name(spi, part.rel.schema, name, "__replaced_")));
        rename_kept_statistics(spi, part.rel.oid);
    } else {
        auto failed = pg::try_in_subtransaction([&] { spi.execute("DROP TABLE " + part.rel.qualified); });
        if (failed) {
            if (pg::error_sqlstate(*failed) != sqlstate::kDependentObjectsStillExist)
                throw *failed;
            throw UserError(
                sqlstate::kDependentObjectsStillExist,
                "cannot drop the replaced partition \"" + part.rel.display + "\": other objects depend on it",
                pg::error_detail(*failed),
                "Use keep_old => true, or drop and recreate the dependent objects; nothing was changed.");
        }
    }
    std::string qualified = staging.qualified;
    if (staging.schema != part.rel.schema) {
        spi.execute("ALTER TABLE " + qualified + " SET SCHEMA " + pg::quote_ident(part.rel.schema));
        qualified = pg::quote_ident(part.rel.schema) + "." + pg::quote_ident(staging.name);
    }
    if (staging.name != part.rel.name) {
        spi.execute("ALTER TABLE " + qualified + " RENAME TO " + pg::quote_ident(part.rel.name));
        qualified = part.rel.qualified;
    }
    spi.execute("ALTER TABLE " + part.parent_qualified + " ATTACH PARTITION " + qualified + " " + part.bound);
    if (drop_bound_check)
        spi.execute("ALTER TABLE " + qualified + " DROP CONSTRAINT " + kBoundCheck);

    // The new partition's indexes get the old ones' names (free once the old
    // table is dropped or its indexes renamed), and the replica identity
    // index is set again.
    for (const auto& [parent_index, index] : indexes_by_parent_index(spi, staging.oid)) {
        auto old = old_indexes.find(parent_index);
        if (old == old_indexes.end())
            continue;
        std::string name = index.name;
        if (name != old->second.name) {
            spi.execute("ALTER INDEX " + pg::quote_ident(part.rel.schema) + "." + pg::quote_ident(name) +
                        " RENAME TO " + pg::quote_ident(old->second.name));
            name = old->second.name;
        }
        if (old->second.replica_identity)
            spi.execute("ALTER TABLE " + qualified + " REPLICA IDENTITY USING INDEX " + pg::quote_ident(name));
    }
    // The partition's own indexes (and constraints: renaming the index
    // renames its constraint) take their old names too.
    for (const auto& index : carried.indexes)
        if (index.staging_name != index.old_name)
            spi.execute("ALTER INDEX " + pg::quote_ident(part.rel.schema) + "." + pg::quote_ident(index.staging_name) +
                        " RENAME TO " + pg::quote_ident(index.old_name));
    name_carried_statistics(spi, carried.statistics);
}

}  // namespace

void check_not_referenced(pg::SpiSession& spi, const Partition& part, bool detaches)
{
    auto r = spi.query(
        "SELECT con.conname::pg_catalog.text, con.conrelid::pg_catalog.regclass::pg_catalog.text"
        " FROM pg_catalog.pg_constraint con"
        " WHERE con.contype OPERATOR(pg_catalog.=) 'f'"
        " AND con.confrelid OPERATOR(pg_catalog.=) ANY (SELECT a.relid FROM pg_catalog.pg_partition_ancestors($1) a)"
        " ORDER BY con.oid LIMIT 1",
        {Param::of_oid(part.rel.oid)});
    if (!r.rows.empty())
        throw UserError(
            sqlstate::kFeatureNotSupported,
            "cannot swap partition \"" + part.rel.display + "\": foreign key \"" + cell(r, 0, 0) + "\" of " +
                cell(r, 0, 1) + " references the partitioned table",
            detaches ? "Detaching the partition would leave rows of " + cell(r, 0, 1) +
                           " referencing a table outside the partitioned table; PostgreSQL refuses it."
                     : "Replacing the partition's storage would not check the rows of " + cell(r, 0, 1) +
                           " that reference its rows.",
            "Use idem.overwrite_partition(..., mode => 'rewrite'): it deletes and inserts in place, and the foreign key keeps being checked.");
}

void check_ownership(pg::SpiSession& spi, const std::vector<std::uint32_t>& relations)
{
    std::string oids;
    for (const std::uint32_t oid : relations)
        oids += (oids.empty() ? "" : ",") + std::to_string(oid);
    auto r = spi.query(
        "SELECT c.oid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_class c"
        " WHERE c.oid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[])"
        " AND NOT pg_catalog.pg_has_role(c.relowner, 'USAGE') ORDER BY c.oid",
        {Param::of_text("{" + oids + "}")});
    if (!r.rows.empty())
        throw UserError(
            sqlstate::kInsufficientPrivilege, "must be owner of table " + cell(r),
            "swap_partition runs as the caller, and detaching and attaching partitions needs ownership.",
            "Run it as the owner of the partitioned table, the partition and the staging table (or a member of the owning role).");
}

std::uint32_t swap_into(pg::SpiSession& spi, const Partition& part, std::uint32_t staging_oid, bool keep_old,
                        const std::optional<std::string>& lock_timeout, const std::string& rows_are)
{
    const pg::Relation staging = pg::describe_relation(staging_oid, pg::RelationLock::kNone);  // locked below
    check_shapes(spi, part, staging);
    check_ownership(spi, {part.parent, part.rel.oid, staging.oid});
    check_not_referenced(spi, part, true);
    if (staging.schema != part.rel.schema) {
        auto clash =
            spi.query("SELECT pg_catalog.to_regclass($1)::pg_catalog.text",
                      {Param::of_text(pg::quote_ident(part.rel.schema) + "." + pg::quote_ident(staging.name))});
        if (!cell(clash).empty() && cell(clash) != part.rel.qualified)
            throw UserError(
                sqlstate::kDuplicateTable,
                "a relation named \"" + staging.name + "\" already exists in schema \"" + part.rel.schema + "\"", {},
                "Name the staging table differently, or build it in schema \"" + part.rel.schema + "\".");
    }
    bool bound_check = false;
    CarriedNames carried;
    with_lock_budget(spi, lock_timeout,
                     "staging table \"" + staging.display +
                         "\" (or a table its foreign keys reference) is in use by another transaction",
                     [&] {
                         spi.execute("LOCK TABLE " + staging.qualified + " IN ACCESS EXCLUSIVE MODE");
                         check_columns(spi, part, staging);
                         check_default_partition(spi, part);
                         bound_check = add_bound_check(spi, part, staging, rows_are);
                         add_parent_checks(spi, part, staging);
                         add_parent_indexes(spi, part, staging);
                         add_parent_foreign_keys(spi, part, staging);
                         carry_triggers(spi, part, staging);
                         carry_row_security(spi, part, staging);
                         carry_properties(spi, part, staging);
                         carried.indexes = carry_local_indexes(spi, part, staging);
                         carry_column_statistics(spi, part, staging);
                         carried.statistics = carry_extended_statistics(spi, part, staging);
                         carry_publications(spi, part, staging);
                         carry_owner_and_grants(spi, part, staging);
                     });
    with_lock_budget(spi, lock_timeout,
                     "partitioned table \"" + part.parent_qualified + "\" is in use by another transaction",
                     [&] { detach_and_attach(spi, part, staging, keep_old, bound_check, carried); });
    return staging.oid;
}

std::uint32_t swap_partition(std::uint32_t partition_oid, std::uint32_t staging_oid, bool keep_old,
                             const std::optional<std::string>& lock_timeout, bool accept_losses)
{
    require_sql(SqlFeature::kSwapCarryFunctions, "swap_partition");
    const RunClock clock;
    pg::SpiSession spi;
    // The partition was named (regclass) before this call began: a swap of
    // it that committed since has dropped that table, and its successor has
    // the name. Nothing has been done yet, so the caller's retry (40001,
    // as for any transaction that lost a race) names the new one.
    auto replaced_meanwhile = [&] {
        return UserError(sqlstate::kSerializationFailure,
                         "partition with OID " + std::to_string(partition_oid) + " was replaced by a concurrent swap",
                         "Another transaction swapped it after this statement named it.",
                         "Run the transaction again: the partition's name then names the new partition.");
    };
    std::optional<pg::Relation> given;
    try {
        given = pg::describe_relation(partition_oid, pg::RelationLock::kNone);  // unit lock first
    } catch (const UserError& e) {
        if (std::string(e.code()) != sqlstate::kUndefinedTable)
            throw;
        throw replaced_meanwhile();
    }
    // The parent from pg_inherits alone: describing the partition deparses
    // its bound, which locks the parent, and no relation may be locked
    // before the serializing lock (partitions.hpp).
    // Whether the table still exists comes from the same snapshot as its
    // parent (the relation cache may not have seen the drop yet).
    auto parent_row = spi.query(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1)::pg_catalog.text,"
        " (SELECT i.inhparent::pg_catalog.text FROM pg_catalog.pg_inherits i"
        "  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid"
        "  WHERE i.inhrelid OPERATOR(pg_catalog.=) $1 AND c.relispartition)",
        {Param::of_oid(partition_oid)});
    if (cell(parent_row, 0, 0) != "true")
        throw replaced_meanwhile();
    if (cell(parent_row, 0, 1).empty())
        throw UserError(
            sqlstate::kWrongObjectType, "\"" + given->display + "\" is not a partition", {},
            "swap_partition replaces one partition of a partitioned table; for a plain table use idem.replace_where.");
    const auto parent = static_cast<std::uint32_t>(std::stoul(cell(parent_row, 0, 1)));
    // Ownership before the lock: a role that may not swap cannot queue on it.
    check_ownership(spi, {parent, partition_oid, staging_oid});
    lock_partitioned_table_unit(spi, parent, true, lock_timeout,
                                "\"" + pg::describe_relation(parent, pg::RelationLock::kNone).display + "\"");
    // The partition by its name now: a swap that held the lock first has
    // replaced the one named by a new table of the same name, and that is the
    // one to replace.
    auto named = spi.query("SELECT pg_catalog.to_regclass($1)::pg_catalog.oid::pg_catalog.text",
                           {Param::of_text(given->qualified)});
    const std::optional<Partition> now =
        cell(named).empty() ? std::nullopt
                            : describe_partition(spi, static_cast<std::uint32_t>(std::stoul(cell(named))));
    if (!now || now->parent != parent)
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "partition \"" + given->display + "\" was detached by another transaction",
                        "It is no longer a partition of \"" + pg::describe_relation(parent).display + "\".",
                        "Nothing was changed.");
    lock_partition_unit(spi, now->rel.oid, lock_timeout, "partition \"" + now->rel.display + "\"");
    refuse_swap_losses(spi, *now, accept_losses);
    const std::uint32_t result =
        swap_into(spi, *now, staging_oid, keep_old, lock_timeout,
                  "staging table \"" + pg::describe_relation(staging_oid, pg::RelationLock::kNone).display + "\"");
    // The rows came with the staging table, which the caller wrote: not
    // counted here (rows_written NULL).
    RunRecord run;
    run.function = "swap_partition";
    run.target = pg::describe_relation(parent).display;
    run.unit = now->rel.display;
    run.action = "swapped";
    run.counts = {{"old_kept", keep_old ? 1 : 0}};
    run.changed = true;
    record_run(spi, clock, run);
    spi.finish();
    return result;
}

}  // namespace pg_idempotent
