// complete, save_point and check_lease: the writes of a key's owner, fenced
// by the token its leased claim handed out (docs/keys.md, Fencing).
#include <vector>

#include "common/installed_sql.hpp"
#include "keys/claimed_tokens.hpp"
#include "keys/key_rows.hpp"
#include "keys/keys.hpp"

namespace pg_idempotent {

namespace {

using keys::key_in_scope;
using keys::KeyRow;
using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

UserError lease_lost(const std::string& key, const std::string& scope, std::int64_t token, const std::string& what,
                     const std::string& detail)
{
    return UserError(sqlstate::kLeaseLost,
                     "lease lost: " + key_in_scope(key, scope) + " " + what + " (this worker holds token " +
                         std::to_string(token) + ")",
                     detail,
                     "Roll back this transaction: its writes belong to a worker that no longer owns the key. "
                     "idem.key_status shows the key's current token.");
}

// Why the token does not own the key (row as this statement sees it, after
// any concurrent takeover committed); nullopt when it does.
std::optional<UserError> why_not_owner(const std::optional<KeyRow>& row, const std::string& key,
                                       const std::string& scope, std::int64_t token)
{
    if (!row)
        return lease_lost(key, scope, token, "does not exist",
                          "It was never claimed, or was deleted (idem.forget, idem.purge_keys) since.");
    if (row->token != std::optional<std::int64_t>(token)) {
        const std::string by = row->token ? "token " + std::to_string(*row->token) : "a claim without a lease";
        return lease_lost(key, scope, token, "was taken over by " + by,
                          "Another worker claimed the key after the lease of token " + std::to_string(token) +
                              " expired (or that token was never this key's).");
    }
    if (row->state != "in_progress")
        return lease_lost(key, scope, token, "is already complete",
                          "Token " + std::to_string(token) + " completed it in an earlier transaction.");
    return std::nullopt;
}

void require_owner(pg::SpiSession& spi, const std::string& key, const std::string& scope, std::int64_t token)
{
    if (auto error = why_not_owner(keys::lookup(spi, scope, key), key, scope, token))
        throw *error;
}

// A write without a token from a session whose own leased claim of the key
// drew a token (keys/claimed_tokens.hpp): the row must still hold that
// token, or no token at all. $4: the token.
constexpr const char* kStillOurs = " AND (k.token IS NULL OR k.token OPERATOR(pg_catalog.=) $4)";

// ID004 when the key is in progress under another token than the one this
// session's claim drew: another worker took it over.
void refuse_taken_over(pg::SpiSession& spi, const std::string& key, const std::string& scope,
                       const std::optional<std::int64_t>& ours)
{
    if (!ours)
        return;
    const std::optional<KeyRow> row = keys::lookup(spi, scope, key);
    if (row && row->state == "in_progress" && row->token && *row->token != *ours)
        throw *why_not_owner(row, key, scope, *ours);
}

// complete without a token: as before fencing existed, but fenced by the
// token of this session's own leased claim of the key, when it made one.
void complete_unfenced(pg::SpiSession& spi, const std::string& key, const std::optional<std::string>& result_json,
                       const std::string& scope)
{
    const std::optional<std::int64_t> ours = keys::claimed_token(scope, key);
    std::vector<Param> params{Param::of_text(scope), Param::of_text(key), Param::of_text(result_json)};
    if (ours)
        params.push_back(Param::of_int8(*ours));
    auto done = spi.query_saved(std::string("UPDATE idem.keys k SET state = 'done', result = $3::pg_catalog.jsonb,"
                                            " completed_at = pg_catalog.now(), lease_until = NULL") +
                                    keys::where_key() +
                                    " AND (k.state OPERATOR(pg_catalog.=) 'in_progress'"
                                    "      OR k.claimed_by OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id())" +
                                    (ours ? kStillOurs : "") + " RETURNING true",
                                params);
    if (!done.rows.empty())
        return;
    refuse_taken_over(spi, key, scope, ours);
    if (!keys::lookup(spi, scope, key))
        throw UserError(sqlstate::kObjectNotInPrerequisiteState, key_in_scope(key, scope) + " was never claimed", {},
                        "Call idem.claim first, in this transaction or with a lease.");
    throw UserError(sqlstate::kObjectNotInPrerequisiteState, key_in_scope(key, scope) + " is already complete",
                    "An earlier transaction completed it; its result stays as it was.",
                    "Read its result with idem.result; to do the work again, idem.forget the key first.");
}

}  // namespace

void complete(const std::string& key, const std::optional<std::string>& result_json, const std::string& scope,
              const std::optional<std::int64_t>& token)
{
    keys::require_result_size(result_json, "the result");
    keys::on_key_state(key, scope, [&](pg::SpiSession& spi) {
        if (!token) {
            complete_unfenced(spi, key, result_json, scope);
            return;
        }
        require_sql(SqlFeature::kKeyTokens, "idem.complete with a token");
        // The UPDATE waits for a concurrent takeover and then sees its row
        // (READ COMMITTED) or fails with 40001: a stale token matches nothing.
        auto done = spi.query_saved(
            std::string("UPDATE idem.keys k SET state = 'done', result = $3::pg_catalog.jsonb,"
                        " completed_at = pg_catalog.now(), lease_until = NULL") +
                keys::where_key() +
                " AND k.token OPERATOR(pg_catalog.=) $4 AND k.state OPERATOR(pg_catalog.=) 'in_progress'"
                " RETURNING true",
            {Param::of_text(scope), Param::of_text(key), Param::of_text(result_json), Param::of_int8(*token)});
        if (done.rows.empty())
            require_owner(spi, key, scope, *token);
    });
}

void save_point(const std::string& key, const std::string& recovery_point, const std::string& scope,
                const std::optional<std::int64_t>& token)
{
    keys::require_result_size(recovery_point, "the recovery point");
    keys::on_key_state(key, scope, [&](pg::SpiSession& spi) {
        if (token)
            require_sql(SqlFeature::kKeyTokens, "idem.save_point with a token");
        // Without a token, fenced by this session's own leased claim, if any.
        const std::optional<std::int64_t> ours = token ? std::nullopt : keys::claimed_token(scope, key);
        std::vector<Param> params{Param::of_text(scope), Param::of_text(key), Param::of_text(recovery_point)};
        if (token || ours)
            params.push_back(Param::of_int8(token ? *token : *ours));
        auto saved =
            spi.query_saved(std::string("UPDATE idem.keys k SET recovery_point = $3,"
                                        " lease_until = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) k.lease") +
                                keys::where_key() + " AND k.state OPERATOR(pg_catalog.=) 'in_progress'" +
                                (token  ? " AND k.token OPERATOR(pg_catalog.=) $4"
                                 : ours ? kStillOurs
                                        : "") +
                                " RETURNING true",
                            params);
        if (!saved.rows.empty())
            return;
        if (token)
            require_owner(spi, key, scope, *token);
        refuse_taken_over(spi, key, scope, ours);
        throw UserError(sqlstate::kObjectNotInPrerequisiteState, key_in_scope(key, scope) + " is not in progress",
                        "save_point records progress of a key claimed with a lease.",
                        "Claim the key with idem.claim_lease first, then record progress with the token it returns.");
    });
}

void check_lease(const std::string& key, const std::string& scope, std::int64_t token)
{
    require_sql(SqlFeature::kKeyTokens, "idem.check_lease");
    keys::on_key_state(key, scope, [&](pg::SpiSession& spi) {
        // FOR SHARE: a takeover (an UPDATE of the row) now waits for this
        // transaction to end, so what this transaction writes after the
        // check commits while the token still owns the key.
        if (auto error = why_not_owner(keys::lookup(spi, scope, key, true), key, scope, token))
            throw *error;
    });
}

}  // namespace pg_idempotent
