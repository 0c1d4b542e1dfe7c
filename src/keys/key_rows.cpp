#include "keys/key_rows.hpp"

#include "common/installed_sql.hpp"
#include "common/scope_grants.hpp"
#include "pg/roles.hpp"

namespace pg_idempotent::keys {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

const char* const kWhereHash =
    " WHERE k.scope OPERATOR(pg_catalog.=) $1"
    " AND k.key_hash OPERATOR(pg_catalog.=) pg_catalog.md5($2)::pg_catalog.uuid";
const char* const kWhereKey =
    " WHERE k.scope OPERATOR(pg_catalog.=) $1"
    " AND k.key_hash OPERATOR(pg_catalog.=) pg_catalog.md5($2)::pg_catalog.uuid"
    " AND k.key COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.=) $2";

bool tokens_installed()
{
    return sql_has(SqlFeature::kKeyTokens);
}

std::string shown(const std::string& key)
{
    if (key.size() <= 80)
        return key;
    // A cut inside a character would make the whole message invalid UTF-8.
    std::size_t cut = 77;
    while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80)
        --cut;
    return key.substr(0, cut) + "...";
}

std::string key_in_scope(const std::string& key, const std::string& scope)
{
    return "idempotency key \"" + shown(key) + "\" in scope \"" + scope + "\"";
}

void require_text(const std::string& value, const char* what)
{
    if (value.empty())
        throw UserError(sqlstate::kInvalidParameterValue, std::string(what) + " must not be empty");
}

std::optional<KeyRow> lookup(pg::SpiSession& spi, const std::string& scope, const std::string& key, bool lock)
{
    const std::string sql =
        std::string(
            "SELECT k.state, k.fingerprint,"
            " COALESCE(k.claimed_by OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id_if_assigned(),"
            " false)::pg_catalog.text,"
            " COALESCE(k.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp(), false)::pg_catalog.text,"
            " k.lease_until::pg_catalog.text, ") +
        (tokens_installed() ? "k.token::pg_catalog.text" : "NULL::pg_catalog.text") + " FROM idem.keys k" + kWhereKey +
        (lock ? " FOR SHARE OF k" : "");
    auto r = spi.query_saved(sql, {Param::of_text(scope), Param::of_text(key)});
    if (r.rows.empty())
        return std::nullopt;
    const auto& row = r.rows[0];
    KeyRow k;
    k.state = row[0].value_or("");
    k.fingerprint = row[1];
    k.mine = row[2] == std::optional<std::string>("true");
    k.lease_live = row[3] == std::optional<std::string>("true");
    k.lease_until = row[4];
    if (row[5])
        k.token = std::stoll(*row[5]);
    return k;
}

void on_key_state(const std::string& key, const std::string& scope, const std::function<void(pg::SpiSession&)>& body)
{
    require_text(key, "key");
    require_text(scope, "scope");
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kKeys, scope);
    pg::as_extension_owner([&] { body(spi); });
    spi.finish();
}

}  // namespace pg_idempotent::keys
