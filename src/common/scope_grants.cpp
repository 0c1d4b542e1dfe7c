#include "common/scope_grants.hpp"

#include <set>
#include <tuple>

#include "common/citus_tables.hpp"
#include "common/installed_sql.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/grant_invalidation.hpp"
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
    case ScopeKind::kEffects:
        return {"effects", "the effects of scope"};
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

namespace {

// The grant decisions already taken, so that a claim per transaction costs
// no query. Allowed (role, kind, scope) triples, kept across transactions
// while pg::grants_generation() holds (the grant table's trigger and role
// changes move it), or for this transaction only where the SQL objects
// predate the trigger (a newer module before ALTER EXTENSION ... UPDATE) or
// a subscription replicates the grant table (grants_replicated).
struct GrantCache {
    using Entry = std::tuple<std::uint32_t, int, std::string>;
    std::uint64_t generation = 0;
    // Whether a subscription replicates the grant table into this database,
    // as of this generation (unknown: not asked yet).
    std::optional<bool> replicated;
    std::set<Entry> lasting;
    std::uint32_t xact = 0;
    std::set<Entry> this_transaction;
    std::uint32_t node_checked_xact = 0;

    // Brings the cache up to date: forgets what may have changed.
    void refresh(std::uint32_t current_xact)
    {
        const std::uint64_t now = pg::grants_generation();
        // A bound, not an expectation: a session that checks thousands of
        // scopes re-reads them.
        if (generation != now || lasting.size() > 4096) {
            lasting.clear();
            replicated.reset();
            generation = now;
        }
        if (xact != current_xact) {
            this_transaction.clear();
            xact = current_xact;
        }
    }
    bool allows(const Entry& e) const { return lasting.count(e) > 0 || this_transaction.count(e) > 0; }
};

GrantCache& grant_cache()
{
    static GrantCache cache;
    return cache;
}

// Whether the role may use the scope, from idem's grant table (a query).
// The table is read as it is now, not as the caller's snapshot shows it: an
// answer read under a REPEATABLE READ snapshot older than a revoke (or one
// imported with SET TRANSACTION SNAPSHOT) would otherwise be cached as
// current and outlive the revoke for the rest of the session. The cache's
// generation is read before this query, so a revoke committed meanwhile
// still clears what it stores.
bool granted(pg::SpiSession& spi, std::uint32_t user, const KindNames& names, const std::string& scope,
             const std::optional<std::string>& legacy_scope)
{
    bool allowed = false;
    const char* const sql = grant_check_sql();
    pg::as_extension_owner([&] {
        auto r = spi.query_saved_latest(
            sql, {Param::of_text(scope), Param::of_oid(user), Param::of_text(std::string(names.sql)),
                  Param::of_text(legacy_scope.value_or(scope))});
        allowed = r.rows.at(0).at(0) == std::optional<std::string>("true");
    });
    return allowed;
}

// Whether a logical-replication subscription of this database replicates
// the grant table. Its apply worker fires no statement trigger, so a
// replicated revoke would never reach this backend's cache: on such a
// subscriber decisions last one transaction only.
bool grants_replicated(pg::SpiSession& spi, std::uint32_t grant_table)
{
    bool replicated = false;
    pg::as_extension_owner([&] {
        auto r = spi.query_saved(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_subscription_rel r"
            " WHERE r.srrelid OPERATOR(pg_catalog.=) $1)::pg_catalog.text",
            {Param::of_oid(grant_table)});
        replicated = r.rows.at(0).at(0) == std::optional<std::string>("true");
    });
    return replicated;
}

}  // namespace

// May the calling role use this scope? Superusers may; others need a row in
// the grant table for the kind and scope, or for every scope, for
// themselves or a role whose privileges they have (GRANT idem_user TO etl
// works through this).
void check_scope_usage(pg::SpiSession& spi, ScopeKind kind, const std::string& scope,
                       const std::optional<std::string>& legacy_scope)
{
    GrantCache& cache = grant_cache();
    const std::uint32_t xact = pg::local_transaction_id();
    const KindNames names = names_of(kind);
    if (cache.node_checked_xact != xact) {
        require_state_node(spi, names);
        cache.node_checked_xact = xact;
    }
    if (pg::current_user_is_superuser())
        return;
    const std::uint32_t grant_table = pg::relation_oid("idem", "usage_grant_rows");
    pg::watch_grant_table(grant_table);
    cache.refresh(xact);
    const std::uint32_t user = pg::current_user_id();
    const GrantCache::Entry entry{user, static_cast<int>(kind), scope};
    if (cache.allows(entry))
        return;
    // A role dropped while its session is open: its grant rows stay until
    // the next grant change, and pg_has_role(oid, oid) of one OID is true
    // even for a role that is gone. Its drop clears the cache
    // (AUTHOID), so a cached answer never skips this.
    if (!pg::role_exists(user))
        throw UserError(sqlstate::kInsufficientPrivilege,
                        "the role of this session (OID " + std::to_string(user) + ") has been dropped",
                        "idem's state is used only by existing roles granted its kind and scope.",
                        "Reconnect as an existing role.");
    if (!granted(spi, user, names, scope, legacy_scope)) {
        const std::string who = pg::current_user_name();
        throw UserError(sqlstate::kInsufficientPrivilege,
                        "role \"" + who + "\" may not use " + names.what + " \"" + scope + "\"",
                        "idem's state (keys and their results, checkpoints, datasets, effects) is used only by roles "
                        "granted its kind and scope.",
                        "A superuser can allow it with SELECT idem.grant_usage(" + pg::quote_literal(who) + ", " +
                            pg::quote_literal(scope) + ", '" + names.sql + "').");
    }
    if (grant_table != 0 && !cache.replicated)
        cache.replicated = grants_replicated(spi, grant_table);
    (grant_table != 0 && !*cache.replicated ? cache.lasting : cache.this_transaction).insert(entry);
}

}  // namespace pg_idempotent
