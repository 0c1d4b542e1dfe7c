#include "common/scope_grants.hpp"

#include "common/citus_tables.hpp"
#include "common/installed_sql.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/transactions.hpp"

namespace pg_idempotent {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

namespace {

struct KindNames {
    const char* sql;   // idem.usage_grants.kind
    const char* what;  // for messages: "may not use <what> \"<scope>\""
};

KindNames names_of(ScopeKind kind)
{
    switch (kind) {
    case ScopeKind::kKeys:
        return {"keys", "idempotency keys in scope"};
    case ScopeKind::kCheckpoints:
        return {"checkpoints", "the checkpoint of job"};
    case ScopeKind::kDataset:
        return {"dataset", "the dataset"};
    }
    return {"keys", "idempotency keys in scope"};
}

// idem's state tables are ordinary tables of the node that has them. On a
// Citus worker (Citus runs queries on any node) they are that worker's own,
// which no other node sees: a key claimed there could be claimed again on
// the coordinator. Refused there, reads included (they would answer from
// the worker's empty tables).
void require_state_node(pg::SpiSession& spi, const KindNames& names)
{
    if (on_citus_coordinator(spi))
        return;
    throw UserError(sqlstate::kFeatureNotSupported,
                    std::string("idem's ") + names.sql + " state lives on the Citus coordinator, not on this worker",
                    "A worker's idem tables are its own: no other node sees a key, checkpoint or dataset there.",
                    "Run the job on the coordinator (docs/scaling.md, Citus).");
}

// The check of a grant for $1 (scope), $2 (the calling role), $3 (kind), $4
// (the scope as 0.6.0 named it), for the grant table as installed:
// idem.usage_grant_rows (0.8.0), idem.usage_grants with kinds (0.7.0), or
// without kinds (0.6.0's, a newer module before ALTER EXTENSION ... UPDATE),
// read as they were meant then.
const char* grant_check_sql()
{
    if (sql_has(SqlFeature::kGrantRows))
        return "SELECT EXISTS (SELECT FROM idem.usage_grant_rows g"
               " WHERE (g.scope IS NULL OR (g.kind OPERATOR(pg_catalog.=) $3 AND g.scope OPERATOR(pg_catalog.=) $1))"
               " AND pg_catalog.pg_has_role($2::pg_catalog.oid, g.role::pg_catalog.oid, 'USAGE'))::pg_catalog.text";
    if (pg::column_exists("idem", "usage_grants", "kind"))
        return "SELECT EXISTS (SELECT FROM idem.usage_grants g"
               " WHERE (g.scope IS NULL OR (g.kind OPERATOR(pg_catalog.=) $3 AND g.scope OPERATOR(pg_catalog.=) $1))"
               " AND pg_catalog.pg_has_role($2::pg_catalog.oid, g.role::pg_catalog.oid, 'USAGE'))::pg_catalog.text";
    return "SELECT EXISTS (SELECT FROM idem.usage_grants g"
           " WHERE (g.scope IS NULL OR g.scope OPERATOR(pg_catalog.=) $4) AND $3 IS NOT NULL"
           " AND pg_catalog.pg_has_role($2::pg_catalog.oid, g.role::pg_catalog.oid, 'USAGE'))::pg_catalog.text";
}

}  // namespace

// May the calling role use this scope? Superusers may; others need a row in
// idem.usage_grants for the kind and scope, or for every scope, for
// themselves or a role whose privileges they have (GRANT idem_user TO etl
// works through this). Cached for the rest of the transaction.
void check_scope_usage(pg::SpiSession& spi, ScopeKind kind, const std::string& scope,
                       const std::optional<std::string>& legacy_scope)
{
    static std::uint32_t cached_xact = 0;
    static std::uint32_t cached_user = 0;
    static ScopeKind cached_kind = ScopeKind::kKeys;
    static std::string cached_scope;
    const std::uint32_t xact = pg::local_transaction_id();
    const std::uint32_t user = pg::current_user_id();
    if (xact == cached_xact && user == cached_user && kind == cached_kind && scope == cached_scope)
        return;
    const KindNames names = names_of(kind);
    require_state_node(spi, names);
    if (!pg::current_user_is_superuser()) {
        bool allowed = false;
        const char* const sql = grant_check_sql();
        pg::as_extension_owner([&] {
            auto r = spi.query_saved(
                sql, {Param::of_text(scope), Param::of_oid(user), Param::of_text(std::string(names.sql)),
                      Param::of_text(legacy_scope.value_or(scope))});
            allowed = r.rows.at(0).at(0) == std::optional<std::string>("true");
        });
        if (!allowed) {
            const std::string who = pg::current_user_name();
            throw UserError(sqlstate::kInsufficientPrivilege,
                            "role \"" + who + "\" may not use " + names.what + " \"" + scope + "\"",
                            "idem's state (keys and their results, checkpoints, datasets) is used only by roles "
                            "granted its kind and scope.",
                            "A superuser can allow it with SELECT idem.grant_usage(" + pg::quote_literal(who) + ", " +
                                pg::quote_literal(scope) + ", '" + names.sql + "').");
        }
    }
    cached_xact = xact;
    cached_user = user;
    cached_kind = kind;
    cached_scope = scope;
}

}  // namespace pg_idempotent
