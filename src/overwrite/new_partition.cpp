#include "overwrite/new_partition.hpp"

#include "core/sql_text.hpp"
#include "overwrite/swap_indexes.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// The partitions' RANGE bounds as values of the key's type t ($1 the
// parent): each bound is deparsed under the canonical settings as
// FOR VALUES FROM ('<lo>') TO ('<hi>'); MINVALUE, MAXVALUE and the DEFAULT
// partition do not match and take no part.
std::string bounds_cte(const std::string& t)
{
    return "b AS (SELECT (m)[1]::" + t + " AS lo, (m)[2]::" + t +
           " AS hi FROM pg_catalog.pg_inherits i"
           " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid"
           " CROSS JOIN LATERAL pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),"
           " '^FOR VALUES FROM \\(''([^'']*)''\\) TO \\(''([^'']*)''\\)$') AS m"
           " WHERE i.inhparent OPERATOR(pg_catalog.=) $1)";
}

// The new partition's bounds and name suffix ($2 the value): the width of
// the partition just before the value (else just after it), whole months
// or years when the neighbour spans one, stepped from the neighbour's edge
// until it holds the value, and cut where the neighbours begin. s is the
// type the steps are taken in (timestamp, or timestamptz for a timestamptz
// key, stepped in UTC). No row when no neighbour has a plain range bound, or
// when the value is 100,000 widths away or more.
std::string proposal_sql(const std::string& t, const std::string& s)
{
    const std::string lt = " OPERATOR(pg_catalog.<) ";
    const std::string le = " OPERATOR(pg_catalog.<=) ";
    const std::string plus = " OPERATOR(pg_catalog.+) ";
    const std::string minus = " OPERATOR(pg_catalog.-) ";
    const std::string eq = " OPERATOR(pg_catalog.=) ";
    return "WITH " + bounds_cte(t) + ", prev AS (SELECT lo, hi FROM b WHERE hi" + le + "$2::" + t +
           " ORDER BY hi DESC LIMIT 1), next AS (SELECT lo, hi FROM b WHERE $2::" + t + lt +
           "lo ORDER BY lo LIMIT 1), nb AS (SELECT lo::" + s + " AS lo, hi::" + s +
           " AS hi FROM (SELECT 1 AS o, * FROM prev UNION ALL SELECT 2, * FROM next) x ORDER BY o LIMIT 1),"
           " w AS (SELECT CASE WHEN nb.lo" +
           plus + "'1 month'::pg_catalog.interval" + eq + "nb.hi THEN '1 month'::pg_catalog.interval WHEN nb.lo" +
           plus + "'1 year'::pg_catalog.interval" + eq + "nb.hi THEN '1 year'::pg_catalog.interval ELSE nb.hi" + minus +
           "nb.lo END AS width FROM nb),"
           " a AS (SELECT COALESCE((SELECT hi::" +
           s + " FROM prev), (SELECT lo::" + s + " FROM next)) AS anchor, $2::" + t + "::" + s +
           " AS v, width FROM w),"
           " l AS (SELECT CASE WHEN anchor" +
           le +
           "v THEN (SELECT pg_catalog.max(g) FROM pg_catalog.generate_series(anchor, v, width) g)"
           " ELSE (SELECT pg_catalog.max(g) FROM pg_catalog.generate_series(anchor" +
           minus + "width, v" + minus + "width, OPERATOR(pg_catalog.-) width) g WHERE g" + le +
           "v) END AS lo, width FROM a"
           " WHERE pg_catalog.abs(EXTRACT(epoch FROM v" +
           minus +
           "anchor)) OPERATOR(pg_catalog./)"
           " EXTRACT(epoch FROM width)" +
           lt +
           "100000),"
           " r AS (SELECT GREATEST(l.lo, (SELECT hi::" +
           s +
           " FROM prev)) AS lo,"
           " LEAST(l.lo" +
           plus + "l.width, (SELECT lo::" + s +
           " FROM next)) AS hi FROM l)"
           " SELECT r.lo::" +
           t + "::pg_catalog.text, r.hi::" + t +
           "::pg_catalog.text,"
           " pg_catalog.to_char(r.lo, CASE WHEN r.lo::pg_catalog.time" +
           eq + "'00:00'::pg_catalog.time THEN 'YYYYMMDD' ELSE 'YYYYMMDD\"_\"HH24MISS' END) FROM r";
}

// Why a parent cannot have a partition proposed, or "" when it can: RANGE
// on one column of a date or timestamp type.
std::string unsupported(pg::SpiSession& spi, const pg::Relation& parent, std::uint32_t key_type)
{
    auto r = spi.query(
        "SELECT p.partstrat::pg_catalog.text FROM pg_catalog.pg_partitioned_table p"
        " WHERE p.partrelid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(parent.oid)});
    const std::string strategy = r.rows.empty() ? "" : r.rows[0][0].value_or("");
    if (strategy != "r")
        return "\"" + parent.display + "\" is partitioned by " +
               (strategy == "l"   ? "LIST"
                : strategy == "h" ? "HASH"
                                  : "another strategy") +
               ": only RANGE partitions have a width to follow";
    const pg::TypeKind kind = pg::type_kind(key_type);
    if (kind != pg::TypeKind::kDate && kind != pg::TypeKind::kTimestamp && kind != pg::TypeKind::kTimestamptz)
        return "its partition key is " + pg::type_display(key_type) + ", not a date or timestamp";
    return "";
}

}  // namespace

PartitionProposal propose_partition(pg::SpiSession& spi, const pg::Relation& parent, std::uint32_t key_type,
                                    const Param& key_param)
{
    PartitionProposal out;
    out.why_not = unsupported(spi, parent, key_type);
    if (!out.why_not.empty())
        return out;
    const std::string t = pg::type_qualified(key_type);
    const std::string s =
        pg::type_kind(key_type) == pg::TypeKind::kTimestamptz ? "pg_catalog.timestamptz" : "pg_catalog.timestamp";
    pg::QueryResult r;
    pg::with_canonical_settings([&] { r = spi.query(proposal_sql(t, s), {Param::of_oid(parent.oid), key_param}); });
    if (r.rows.empty() || !r.rows[0][0] || !r.rows[0][1]) {
        out.why_not = "\"" + parent.display +
                      "\" has no partition with a FROM ... TO bound near the value to take the width from";
        return out;
    }
    NewPartition p;
    p.lower = *r.rows[0][0];
    p.upper = *r.rows[0][1];
    const std::string name = core::identifier_with_suffix(parent.name, "_" + r.rows[0][2].value_or(""));
    auto taken = spi.query("SELECT pg_catalog.to_regclass($1) IS NOT NULL",
                           {Param::of_text(pg::quote_ident(parent.schema) + "." + pg::quote_ident(name))});
    const std::string free =
        taken.rows.at(0).at(0) == std::optional<std::string>("t") ? free_name(spi, parent.schema, name, "_") : name;
    p.qualified = pg::quote_ident(parent.schema) + "." + pg::quote_ident(free);
    p.bound = "FOR VALUES FROM (" + pg::quote_literal(p.lower) + ") TO (" + pg::quote_literal(p.upper) + ")";
    p.create_sql = "CREATE TABLE " + p.qualified + " PARTITION OF " + parent.qualified + " " + p.bound;
    out.partition = p;
    return out;
}

void create_partition(pg::SpiSession& spi, const pg::Relation& parent, const std::string& key_column,
                      std::uint32_t key_type, const NewPartition& p)
{
    auto owner = spi.query(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE')::pg_catalog.text"
        " FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(parent.oid)});
    if (owner.rows.at(0).at(0) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInsufficientPrivilege, "must be owner of table " + parent.display,
                        "create_partition attaches a new partition to it, which needs ownership.",
                        "Run it as the table's owner (or a member of the owning role), or have the owner create "
                        "the partition: " +
                            p.create_sql + ".");
    // The DEFAULT partition's rows of the range would have to move: ATTACH
    // refuses them, and so does this, first, saying which.
    auto in_default = spi.query(
        "SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||)"
        " pg_catalog.quote_ident(c.relname::pg_catalog.text) FROM pg_catalog.pg_partitioned_table t"
        " JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.partdefid"
        " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"
        " WHERE t.partrelid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(parent.oid)});
    if (!in_default.rows.empty()) {
        const std::string def = in_default.rows[0][0].value_or("");
        const std::string k = pg::quote_ident(key_column);
        pg::QueryResult rows;
        pg::with_canonical_settings([&] {
            const std::string t = pg::type_qualified(key_type);
            rows =
                spi.query("SELECT pg_catalog.count(*)::pg_catalog.text FROM ONLY " + def + " d WHERE d." + k +
                              " OPERATOR(pg_catalog.>=) $1::" + t + " AND d." + k + " OPERATOR(pg_catalog.<) $2::" + t,
                          {Param::of_text(p.lower), Param::of_text(p.upper)});
        });
        if (rows.rows.at(0).at(0) != std::optional<std::string>("0"))
            throw UserError(sqlstate::kCheckViolation,
                            "the DEFAULT partition " + def + " holds " + rows.rows[0][0].value_or("") +
                                (rows.rows[0][0] == std::optional<std::string>("1") ? " row" : " rows") +
                                " of the new partition's range",
                            "create_partition would create " + p.qualified + " " + p.bound + ".",
                            "Move those rows out of the DEFAULT partition first; nothing was changed.");
    }
    auto ts = spi.query(
        "SELECT COALESCE((SELECT ' TABLESPACE ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(s.spcname)"
        " FROM pg_catalog.pg_tablespace s WHERE s.oid OPERATOR(pg_catalog.=) c.reltablespace), '')"
        " FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(parent.oid)});
    spi.execute("CREATE TABLE " + p.qualified + " (LIKE " + parent.qualified +
                " INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE"
                " INCLUDING COMPRESSION)" +
                ts.rows.at(0).at(0).value_or(""));
    pg::with_canonical_settings(
        [&] { spi.execute("ALTER TABLE " + parent.qualified + " ATTACH PARTITION " + p.qualified + " " + p.bound); });
}

}  // namespace pg_idempotent
