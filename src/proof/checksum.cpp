#include "proof/checksum.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "common/citus_tables.hpp"
#include "common/installed_sql.hpp"
#include "core/digest.hpp"
#include "core/sql_text.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg_native/statement_digest.hpp"

namespace pg_idempotent {

namespace {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

// Tables, partitioned tables (all partitions), views, materialized views and
// foreign tables: everything a SELECT can read rows from.
void require_readable_kind(const pg::Relation& rel)
{
    static const std::string kReadable = "rpvmf";
    if (kReadable.find(rel.kind) == std::string::npos) {
        throw UserError(
            sqlstate::kWrongObjectType, "\"" + rel.display + "\" is not a table or view",
            "Only tables, partitioned tables, views, materialized views and foreign tables have rows to checksum.",
            "Checksum a table or view, or the rows of a query with idem.checksum_query.");
    }
}

// The live columns of rel minus exclude_columns; an excluded name the relation
// does not have is an error (a typo must not silently checksum everything).
std::vector<const pg::Column*> kept_columns(const pg::Relation& rel, const std::vector<std::string>& exclude)
{
    std::set<std::string> excluded;
    for (const auto& name : exclude) {
        const bool known =
            std::any_of(rel.columns.begin(), rel.columns.end(), [&](const pg::Column& c) { return c.name == name; });
        if (!known) {
            throw UserError(sqlstate::kUndefinedColumn,
                            "column \"" + name + "\" of relation \"" + rel.display + "\" does not exist",
                            "It was named in exclude_columns.", "Column names are matched exactly, case included.");
        }
        excluded.insert(name);
    }
    std::vector<const pg::Column*> kept;
    for (const auto& c : rel.columns)
        if (excluded.count(c.name) == 0)
            kept.push_back(&c);
    return kept;
}

std::string select_kept(const pg::Relation& rel, const std::vector<const pg::Column*>& kept)
{
    std::vector<std::string> quoted;
    quoted.reserve(kept.size());
    for (const auto* c : kept)
        quoted.push_back(pg::quote_ident(c->name));
    return core::select_columns(quoted, rel.qualified);
}

// A row of s as JSON, its columns named (to_jsonb(s) of a subquery that
// Citus read through an intermediate result named them f1, f2, ...):
// jsonb_build_object takes 50 pairs at most, so larger rows are joined.
std::string row_json(const std::vector<const pg::Column*>& kept)
{
    constexpr std::size_t kPairsPerCall = 50;
    std::vector<std::string> calls;
    for (std::size_t i = 0; i < kept.size(); i += kPairsPerCall) {
        std::vector<std::string> pairs;
        for (std::size_t j = i; j < kept.size() && j < i + kPairsPerCall; ++j)
            pairs.push_back(pg::quote_literal(kept[j]->name) + ", s." + pg::quote_ident(kept[j]->name));
        calls.push_back("pg_catalog.jsonb_build_object(" + core::join(pairs) + ")");
    }
    if (calls.empty())
        return "'{}'::pg_catalog.jsonb";
    return core::join(calls, " OPERATOR(pg_catalog.||) ");
}

// A Citus distributed table: each shard's count and sum of row hashes are
// made on its worker (Citus splits count and sum into a part per shard and
// adds the parts), and only those numbers travel, not the rows; the sum
// modulo 2^128 is the digest's (core/digest.hpp). Read in the caller's
// transaction, like any query. nullopt when it does not apply.
std::optional<std::string> checksum_on_shards(pg::SpiSession& spi, const pg::Relation& rel,
                                              const std::vector<const pg::Column*>& kept)
{
    if (kept.empty() || !sql_has(SqlFeature::kRowHash) || citus_table(spi, rel.oid).kind != CitusKind::kDistributed)
        return std::nullopt;
    std::vector<std::string> quoted;
    for (const auto* c : kept)
        quoted.push_back(pg::quote_ident(c->name));
    const auto r = spi.query("SELECT pg_catalog.count(*)::pg_catalog.text, COALESCE(pg_catalog.sum(idem._row_hash(" +
                             core::join(quoted) + ")), 0)::pg_catalog.text FROM " + rel.qualified);
    const auto sum = core::digest_from_decimal(r.rows.at(0).at(1).value_or(""));
    if (!sum)
        throw std::runtime_error("checksum of a distributed table: the sum of row hashes is not an integer");
    return core::MultisetDigest::from_parts(*sum, std::stoull(r.rows.at(0).at(0).value_or("0"))).text();
}

}  // namespace

std::string checksum_relation(std::uint32_t relation, const std::vector<std::string>& exclude_columns)
{
    pg::require_table_privileges(relation, {pg::TablePrivilege::kSelect}, "idem.checksum");
    pg::SpiSession spi;
    const pg::Relation rel = pg::describe_relation(relation);
    require_readable_kind(rel);
    const auto kept = kept_columns(rel, exclude_columns);
    const std::optional<std::string> on_shards = checksum_on_shards(spi, rel, kept);
    std::string digest;
    if (on_shards) {
        digest = *on_shards;
    } else {
        // Without JIT: at 10M rows the scan's cost crosses the inlining and
        // optimizing thresholds, and compiling took 200 ms more than it saved
        // and kept 10 MB in the backend (bench/README, "Growth").
        const pg::SettingsScope no_jit(pg::Settings{{"jit", "off"}});
        digest =
            pg::digest_select_text(spi, select_kept(rel, kept), kept.size(), sql_has(SqlFeature::kDigestAggregate));
    }
    spi.finish();
    return digest;
}

std::string checksum_query(const std::string& query, const pg::QueryParams& params)
{
    pg::require_bound(query, params, "the query");
    pg::SpiSession spi;
    const core::MultisetDigest digest = pg::digest_statement_rows(spi, query, params.values);
    spi.finish();
    return digest.text();
}

void diff_relations(const pg::ResultSet& out, std::uint32_t a, std::uint32_t b,
                    const std::vector<std::string>& exclude_columns, std::int32_t max_rows)
{
    if (max_rows < 0)
        throw UserError(sqlstate::kInvalidParameterValue, "max_rows must not be negative", {},
                        "Pass max_rows => 0 or more (0: only count).");
    pg::require_table_privileges(a, {pg::TablePrivilege::kSelect}, "idem.diff");
    pg::require_table_privileges(b, {pg::TablePrivilege::kSelect}, "idem.diff");
    pg::SpiSession spi;
    const pg::Relation ra = pg::describe_relation(a);
    const pg::Relation rb = pg::describe_relation(b);
    require_readable_kind(ra);
    require_readable_kind(rb);
    const auto ka = kept_columns(ra, exclude_columns);
    const auto kb = kept_columns(rb, exclude_columns);
    if (ka.size() != kb.size()) {
        throw UserError(sqlstate::kDatatypeMismatch, "cannot diff relations with different columns",
                        "\"" + ra.name + "\" has " + std::to_string(ka.size()) + " columns and \"" + rb.name +
                            "\" has " + std::to_string(kb.size()) + " (after exclude_columns).",
                        "Compare relations of the same columns, or leave the extra ones out with exclude_columns.");
    }
    for (std::size_t i = 0; i < ka.size(); ++i) {
        if (ka[i]->type_oid != kb[i]->type_oid || ka[i]->typmod != kb[i]->typmod) {
            throw UserError(sqlstate::kDatatypeMismatch,
                            "cannot diff relations whose column " + std::to_string(i + 1) + " has different types",
                            "Column \"" + ka[i]->name + "\" is " + ka[i]->type_name + " and column \"" + kb[i]->name +
                                "\" is " + kb[i]->type_name + ".",
                            "Rows are compared by their stored image, so columns must match in order and type.");
        }
    }
    const std::string sa = select_kept(ra, ka);
    const std::string sb = select_kept(rb, kb);
    // Counted by row digest (the one definition of "the same row"), then one
    // sample row per differing digest. Everything schema-qualified.
    const std::string sql =
        "WITH counted AS MATERIALIZED ("
        " SELECT u.h, pg_catalog.sum(u.w)::pg_catalog.int8 AS n FROM ("
        "  SELECT idem._row_digest(s) AS h, 1 AS w FROM (" +
        sa +
        ") s"
        "  UNION ALL"
        "  SELECT idem._row_digest(s) AS h, -1 AS w FROM (" +
        sb +
        ") s) u"
        " GROUP BY u.h HAVING pg_catalog.sum(u.w) OPERATOR(pg_catalog.<>) 0"
        " ORDER BY u.h LIMIT $1),"
        " samples AS ("
        " SELECT DISTINCT ON (x.h) x.h, x.row_data FROM ("
        "  SELECT idem._row_digest(s) AS h, " +
        row_json(ka) + " AS row_data FROM (" + sa +
        ") s"
        "  UNION ALL"
        "  SELECT idem._row_digest(s) AS h, " +
        row_json(kb) + " AS row_data FROM (" + sb +
        ") s) x"
        " WHERE x.h OPERATOR(pg_catalog.=) ANY (SELECT c.h FROM counted c)"
        " ORDER BY x.h)"
        " SELECT CASE WHEN c.n OPERATOR(pg_catalog.>) 0 THEN 'a' ELSE 'b' END::pg_catalog.text AS side,"
        "        pg_catalog.abs(c.n) AS copies, s.row_data"
        " FROM counted c JOIN samples s ON s.h OPERATOR(pg_catalog.=) c.h"
        " ORDER BY 1, 3";
    spi.return_rows(out, sql, {pg::Param::of_int4(max_rows)});
    spi.finish();
}

}  // namespace pg_idempotent
