#include "keys/key_rows.hpp"

#include "common/installed_sql.hpp"
#include "common/scope_grants.hpp"
#include "core/digest.hpp"
#include "core/key_id.hpp"
#include "core/md5.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"

namespace pg_idempotent::keys {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

namespace {

// Whether the installed idem.keys is keyed by (scope, key) (0.8.0); before,
// by (scope, key_hash = md5(key)::uuid).
bool key_ids_installed()
{
    return sql_has(SqlFeature::kKeyIds);
}

// SQL: whether the key expression is stored inline (core::key_is_inline).
std::string inline_sql(const std::string& key)
{
    return "(pg_catalog.octet_length(" + key + ") OPERATOR(pg_catalog.<=) " + std::to_string(core::kInlineKeyBytes) +
           " AND pg_catalog.left(" + key + ", 1) OPERATOR(pg_catalog.<>) pg_catalog.chr(1))";
}

}  // namespace

std::string id_sql(const std::string& key)
{
    if (!key_ids_installed())
        return "pg_catalog.md5(" + key + ")::pg_catalog.uuid";
    return "(CASE WHEN " + inline_sql(key) + " THEN " + key +
           " ELSE pg_catalog.chr(1) OPERATOR(pg_catalog.||) pg_catalog.md5(" + key + ") END)";
}

const char* id_column()
{
    return key_ids_installed() ? "key" : "key_hash";
}

std::string id_text_sql()
{
    return key_ids_installed() ? "k.key" : "pg_catalog.encode(pg_catalog.uuid_send(k.key_hash), 'hex')";
}

const char* id_array_type()
{
    return key_ids_installed() ? "pg_catalog.text[]" : "pg_catalog.uuid[]";
}

std::string id_of(const std::string& key)
{
    if (key_ids_installed())
        return core::key_id(key);
    unsigned char digest[16];
    core::md5(key.data(), key.size(), digest);
    return core::to_hex(core::from_bytes(digest));
}

std::string full_key_sql()
{
    return key_ids_installed() ? "COALESCE(k.long_key, k.key)" : "k.key";
}

std::string key_columns_sql()
{
    return key_ids_installed() ? "key, long_key" : "key_hash, key";
}

std::string key_values_sql(const std::string& key)
{
    if (!key_ids_installed())
        return id_sql(key) + ", " + key;
    return id_sql(key) + ", CASE WHEN " + inline_sql(key) + " THEN NULL ELSE " + key + " END";
}

std::string where_id()
{
    return std::string(" WHERE k.scope OPERATOR(pg_catalog.=) $1 AND k.") + id_column() + " OPERATOR(pg_catalog.=) " +
           id_sql("$2");
}

std::string where_key()
{
    return where_id() + " AND " + full_key_sql() + " COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.=) $2";
}

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
        throw UserError(sqlstate::kInvalidParameterValue, std::string(what) + " must not be empty", {},
                        "Pass a non-empty " + std::string(what) + ".");
}

void require_key_size(const std::string& value, const char* what)
{
    if (value.size() <= kMaxKeyBytes)
        return;
    throw UserError(sqlstate::kProgramLimitExceeded,
                    std::string(what) + " is " + std::to_string(value.size()) + " bytes, more than idem keeps (" +
                        std::to_string(kMaxKeyBytes) + ")",
                    "Keys and fingerprints are stored in idem.keys, which every granted role shares.",
                    "Use an identifier of the request (an event id, an order number), or a digest of a long "
                    "one: md5(...) or sha256(...).");
}

void require_result_size(const std::optional<std::string>& value, const char* what)
{
    const std::size_t limit = pg::max_result_bytes();
    if (!value || value->size() <= limit)
        return;
    throw UserError(sqlstate::kProgramLimitExceeded,
                    std::string(what) + " is " + std::to_string(value->size()) +
                        " bytes, more than idem.max_result_size (" + std::to_string(limit / 1024) + " kB)",
                    "Results and recovery points are stored in idem.keys, which every granted role shares.",
                    "Store what a retry needs to answer (an id, a status) and keep bulk data in a table of your "
                    "own; a superuser can raise idem.max_result_size.");
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
        (tokens_installed() ? "k.token::pg_catalog.text" : "NULL::pg_catalog.text") + " FROM idem.keys k" +
        where_key() + (lock ? " FOR SHARE OF k" : "");
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
