#include "usage.hpp"

#include "pg/errors.hpp"
#include "pg/identity.hpp"

namespace pg_idempotent {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// May the calling role use this scope? Superusers may; others need a row in
// idem.usage_grants for the scope or for all scopes, for themselves or a role
// whose privileges they have (GRANT idem_user TO etl works through this).
// Cached for the rest of the transaction.
void check_scope_usage(pg::SpiSession& spi, const std::string& scope, const char* what)
{
    static std::uint32_t cached_xact = 0;
    static std::uint32_t cached_user = 0;
    static std::string cached_scope;
    const std::uint32_t xact = pg::local_transaction_id();
    const std::uint32_t user = pg::current_user_id();
    if (xact == cached_xact && user == cached_user && scope == cached_scope)
        return;
    if (!pg::current_user_is_superuser()) {
        bool allowed = false;
        pg::as_extension_owner([&] {
            auto r = spi.query_saved(
                "SELECT EXISTS (SELECT FROM idem.usage_grants g"
                " WHERE (g.scope IS NULL OR g.scope OPERATOR(pg_catalog.=) $1)"
                " AND pg_catalog.pg_has_role($2::pg_catalog.oid, g.role::pg_catalog.oid, 'USAGE'))::pg_catalog.text",
                {Param::of_text(scope), Param::of_oid(user)});
            allowed = r.rows.at(0).at(0) == std::optional<std::string>("true");
        });
        if (!allowed) {
            const std::string who = pg::current_user_name();
            throw UserError(sqlstate::kInsufficientPrivilege,
                            "role \"" + who + "\" may not use " + std::string(what) + " \"" + scope + "\"",
                            "idem's state (keys and their results, checkpoints, datasets) is used only by roles allowed its scope.",
                            "A superuser can allow it with SELECT idem.grant_usage('" + who + "') (every scope) or "
                            "idem.grant_usage('" + who + "', '" + scope + "').");
        }
    }
    cached_xact = xact;
    cached_user = user;
    cached_scope = scope;
}

}  // namespace pg_idempotent
