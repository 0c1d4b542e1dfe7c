#include "keys/keys.hpp"

#include <map>

#include "common/installed_sql.hpp"
#include "common/scope_grants.hpp"
#include "core/digest.hpp"
#include "keys/claimed_tokens.hpp"
#include "keys/key_rows.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg_native/key_row_insert.hpp"

namespace pg_idempotent {

namespace {

using keys::key_in_scope;
using keys::KeyRow;
using keys::require_text;
using keys::shown;
using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// What a claim ends with: whether this transaction owns the key, and the
// fencing token of its row (a leased claim and a takeover draw one).
struct ClaimOutcome {
    bool owned = false;
    std::optional<std::int64_t> token;
};

// ", <column> = nextval('idem.key_tokens')" where the SQL objects have
// the token column, else nothing (no tokens before ALTER EXTENSION UPDATE).
std::string next_token_sql(const char* prefix)
{
    if (!keys::tokens_installed())
        return "";
    return std::string(prefix) + "pg_catalog.nextval('idem.key_tokens'::pg_catalog.regclass)";
}

std::string returned_token_sql()
{
    return keys::tokens_installed() ? "k.token::pg_catalog.text" : "NULL::pg_catalog.text";
}

std::optional<std::int64_t> token_of(const std::optional<std::string>& text)
{
    if (!text)
        return std::nullopt;
    return std::stoll(*text);
}

// The INSERT of a new key: a leased one draws its token.
std::string insert_claim_sql()
{
    const bool tokens = keys::tokens_installed();
    return std::string("INSERT INTO idem.keys AS k (scope, ") + keys::key_columns_sql() +
           ", fingerprint, state, lease, claimed_at, lease_until, claimed_by" + (tokens ? ", token" : "") +
           ") VALUES ($1, " + keys::key_values_sql("$2") +
           ", $3,"
           "  CASE WHEN $4::pg_catalog.interval IS NULL THEN 'done' ELSE 'in_progress' END,"
           "  $4::pg_catalog.interval, pg_catalog.now(),"
           "  pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $4::pg_catalog.interval,"
           "  pg_catalog.pg_current_xact_id()" +
           (tokens ? ", CASE WHEN $4::pg_catalog.interval IS NULL THEN NULL ELSE " + next_token_sql("") + " END"
                   : std::string()) +
           ") ON CONFLICT (scope, " + keys::id_column() + ") DO NOTHING RETURNING " + returned_token_sql();
}

// A takeover of an expired lease, with a new token: the old owner's token
// no longer owns the key.
std::string takeover_sql()
{
    return std::string(
               "UPDATE idem.keys k SET"
               " state = CASE WHEN $3::pg_catalog.interval IS NULL THEN 'done' ELSE 'in_progress' END,"
               " lease = $3::pg_catalog.interval, claimed_at = pg_catalog.now(),"
               " lease_until = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $3::pg_catalog.interval,"
               " claimed_by = pg_catalog.pg_current_xact_id(), fingerprint = COALESCE($4, k.fingerprint)") +
           next_token_sql(", token = ") + keys::where_key() +
           " AND k.state OPERATOR(pg_catalog.=) 'in_progress'"
           " AND k.lease_until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() RETURNING " +
           returned_token_sql();
}

void check_fingerprint(const KeyRow& row, const ClaimRequest& request)
{
    if (request.fingerprint && row.fingerprint != request.fingerprint) {
        throw UserError(sqlstate::kFingerprintMismatch,
                        "idempotency key \"" + shown(request.key) + "\" in scope \"" + request.scope +
                            "\" was used for a different request",
                        "It was claimed with fingerprint " +
                            (row.fingerprint ? "\"" + *row.fingerprint + "\"" : std::string("NULL")) +
                            ", this call has \"" + *request.fingerprint + "\".",
                        "A retry must send the same request; a new request needs a new key.");
    }
}

UserError collision_error(const std::string& key, const std::string& scope)
{
    return UserError(
        sqlstate::kKeyHashCollision,
        "idempotency key \"" + shown(key) + "\" in scope \"" + scope +
            "\" has the same MD5 as another key of that scope",
        "idem.keys finds a key longer than 512 bytes by its MD5; the row of that digest holds another key.",
        "Use another key (a random UUID, for example), or another scope.");
}

// Whether the key's hash is held by another key's row (a collision): asked
// when this key has no row but its INSERT met a conflict.
bool hash_held_by_other_key(pg::SpiSession& spi, const std::string& scope, const std::string& key)
{
    auto r = spi.query_saved(std::string("SELECT true FROM idem.keys k") + keys::where_id() + " AND " +
                                 keys::full_key_sql() + " COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.<>) $2",
                             {Param::of_text(scope), Param::of_text(key)});
    return !r.rows.empty();
}

UserError leased_error(const ClaimRequest& request, const char* how)
{
    return UserError(sqlstate::kLockNotAvailable, key_in_scope(request.key, request.scope) + " " + how,
                     "idem.key_status shows until when.", "Retry after the lease expires, or let that worker finish.");
}

// The row the direct insert found, as the SQL path's look-up reads it.
KeyRow row_found(const pg::KeyClaimResult& direct)
{
    KeyRow k;
    k.state = direct.existing.state;
    k.fingerprint = direct.existing.fingerprint;
    k.mine = direct.existing.claimed_by_this_transaction;
    k.lease_live = direct.existing.lease_live;
    k.token = direct.token;
    return k;
}

// The row of the key: inserted by this call (nullopt, *inserted, *token
// the new row's), or the one already there. Through pg::insert_claim_row
// where it applies (no SPI, no executor start; a duplicate assigns no
// transaction id), else through SQL: the INSERT (ON CONFLICT waits for a
// concurrent claimer's transaction to end), and a look-up only when the row
// already exists. nullopt without *inserted: a key forgotten between the
// two statements.
std::optional<KeyRow> insert_or_find(pg::SpiSession& spi, const ClaimRequest& request, bool* inserted,
                                     std::optional<std::int64_t>* token)
{
    *inserted = false;
    const pg::KeyClaimResult direct =
        pg::insert_claim_row({request.scope, request.key, request.fingerprint, request.lease});
    switch (direct.outcome) {
    case pg::KeyClaimResult::Outcome::kInserted:
        *inserted = true;
        *token = direct.token;
        return std::nullopt;
    case pg::KeyClaimResult::Outcome::kExists:
        if (!direct.existing.same_key)
            throw collision_error(request.key, request.scope);
        return row_found(direct);
    case pg::KeyClaimResult::Outcome::kUnsupported:
        break;
    }
    auto ins =
        spi.query_saved(insert_claim_sql(), {Param::of_text(request.scope), Param::of_text(request.key),
                                             Param::of_text(request.fingerprint), Param::of_text(request.lease)});
    if (!ins.rows.empty()) {
        *inserted = true;
        *token = token_of(ins.rows[0][0]);
        return std::nullopt;
    }
    return keys::lookup(spi, request.scope, request.key);
}

ClaimOutcome claim_as_owner(pg::SpiSession& spi, const ClaimRequest& request)
{
    const Param scope = Param::of_text(request.scope);
    const Param key = Param::of_text(request.key);
    // Insert first; read the row only when it already exists: a fresh key
    // costs one statement, not a look-up and then the insert.
    // Two rounds at most: a key forgotten between two steps is claimed anew.
    for (int attempt = 0; attempt < 2; ++attempt) {
        bool inserted = false;
        std::optional<std::int64_t> token;
        auto row = insert_or_find(spi, request, &inserted, &token);
        if (inserted)
            return {true, token};
        if (!row) {
            // The INSERT met a row, and none is this key's: another key's
            // row with the same hash, or this key's row forgotten meanwhile.
            if (hash_held_by_other_key(spi, request.scope, request.key))
                throw collision_error(request.key, request.scope);
            continue;
        }
        check_fingerprint(*row, request);
        if (row->mine)
            return {true, row->token};  // this transaction claimed it already
        if (row->state == "done")
            return {false, std::nullopt};
        if (row->lease_live)
            throw leased_error(request, "is leased by another worker");
        auto took = spi.query_saved(takeover_sql(),
                                    {scope, key, Param::of_text(request.lease), Param::of_text(request.fingerprint)});
        if (!took.rows.empty())
            return {true, token_of(took.rows[0][0])};
        // Someone else took it over first: look again (its lease is live now).
    }
    auto row = keys::lookup(spi, request.scope, request.key);
    if (row && row->lease_live)
        throw leased_error(request, "was just taken over by another worker");
    return {false, std::nullopt};
}

// One statement for the whole batch: new keys are inserted in hash order
// (ON CONFLICT waits on a concurrent claimer's transaction, one at a
// time: no lock slot per key), expired leases are taken over, keys this
// transaction already owns are included.
std::string claim_many_sql()
{
    const std::string id = std::string("k.") + keys::id_column();
    const std::string key = keys::full_key_sql();
    const std::string same_key = " AND " + id + " OPERATOR(pg_catalog.=) i.h AND " + key +
                                 " COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.=) i.k";
    return "WITH input AS (SELECT DISTINCT u.k, " + keys::id_sql("u.k") +
           " AS h FROM pg_catalog.unnest($2::pg_catalog.text[]) AS u(k)),"
           " ins AS (INSERT INTO idem.keys AS k (scope, " +
           keys::key_columns_sql() +
           ", state, claimed_at, claimed_by)"
           "  SELECT $1, " +
           keys::key_values_sql("i.k") +
           ", 'done', pg_catalog.now(), pg_catalog.pg_current_xact_id() FROM input i"
           "  ORDER BY i.h ON CONFLICT (scope, " +
           keys::id_column() + ") DO NOTHING RETURNING " + key +
           " AS key),"
           " took AS (UPDATE idem.keys k SET state = 'done', lease = NULL, lease_until = NULL,"
           "  claimed_at = pg_catalog.now(), claimed_by = pg_catalog.pg_current_xact_id()" +
           next_token_sql(", token = ") + "  FROM input i WHERE k.scope OPERATOR(pg_catalog.=) $1" + same_key +
           "  AND k.state OPERATOR(pg_catalog.=) 'in_progress'"
           "  AND k.lease_until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() RETURNING " +
           key +
           " AS key),"
           " mine AS (SELECT " +
           key + " AS key FROM idem.keys k JOIN input i ON k.scope OPERATOR(pg_catalog.=) $1" + same_key +
           "  WHERE k.claimed_by OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id())"
           " SELECT key FROM ins UNION SELECT key FROM took UNION SELECT key FROM mine";
}

// A key whose hash another key holds is neither inserted nor returned by
// claim_many_sql(): the batch fails on it (ID003) rather than report it as claimed
// before. Two keys of the batch with one hash are found by batch_hashes; a
// row of another key after the statement, by check_hashes_held.

// The batch's distinct primary key values (keys::id_of) and the key of each.
struct BatchHashes {
    std::map<std::string, const std::string*> key_of_hash;
    std::vector<std::string> hashes;
};

BatchHashes batch_hashes(const std::vector<std::string>& keys, const std::string& scope)
{
    BatchHashes batch;
    for (const auto& k : keys) {
        const std::string h = keys::id_of(k);
        auto [at, fresh] = batch.key_of_hash.emplace(h, &k);
        if (fresh)
            batch.hashes.push_back(h);
        else if (*at->second != k)
            throw collision_error(k, scope);
    }
    return batch;
}

// Run after claim_many_sql(), which has waited for any concurrent claimer of those
// hashes, so a row committed meanwhile is seen too. One index look-up of all
// the hashes, the keys compared here: a join that computes md5() per pair
// can be planned as a nested loop (the planner has no statistics for a fresh
// table), which grows with the square of the batch.
void check_hashes_held(pg::SpiSession& spi, const std::string& scope, const BatchHashes& batch)
{
    auto held = spi.query("SELECT " + keys::id_text_sql() + ", " + keys::full_key_sql() +
                              " FROM idem.keys k WHERE k.scope OPERATOR(pg_catalog.=) $1 AND k." + keys::id_column() +
                              " OPERATOR(pg_catalog.=) ANY ($2::" + keys::id_array_type() + ")",
                          {Param::of_text(scope), Param::of_text_array(batch.hashes)});
    for (const auto& row : held.rows) {
        const std::string* key = batch.key_of_hash.at(row.at(0).value_or(""));
        if (row.at(1) != std::optional<std::string>(*key))
            throw collision_error(*key, scope);
    }
}

// What most claims are, a fresh key or one already done (or claimed by this
// transaction), decided by the direct insert alone, as the extension owner
// but without pinning search_path (no statement runs). nullopt for the rest
// (a lease to check or take over, a collision, the SQL path), which
// claim_as_owner decides from the start.
std::optional<ClaimOutcome> claim_directly(const ClaimRequest& request)
{
    pg::KeyClaimResult direct;
    pg::as_extension_owner_without_sql([&] {
        direct = pg::insert_claim_row({request.scope, request.key, request.fingerprint, request.lease});
    });
    if (direct.outcome == pg::KeyClaimResult::Outcome::kInserted)
        return ClaimOutcome{true, direct.token};
    if (direct.outcome != pg::KeyClaimResult::Outcome::kExists || !direct.existing.same_key)
        return std::nullopt;
    const KeyRow row = row_found(direct);
    check_fingerprint(row, request);
    if (row.mine)
        return ClaimOutcome{true, row.token};
    if (row.state == "done")
        return ClaimOutcome{false, std::nullopt};
    return std::nullopt;
}

// The caller's side of a claim: the arguments, the grant, then the claim as
// the extension owner, with wait => false's 55P03.
ClaimOutcome claim_key(const ClaimRequest& request)
{
    require_text(request.key, "key");
    require_text(request.scope, "scope");
    keys::require_key_size(request.key, "key");
    if (request.fingerprint)
        keys::require_key_size(*request.fingerprint, "fingerprint");
    // Connected only if a statement runs: a superuser's claim through
    // pg::insert_claim_row needs none.
    pg::SpiSession spi{pg::SpiSession::Deferred{}};
    if (request.lease) {
        auto r = spi.query(
            "SELECT ($1::pg_catalog.interval OPERATOR(pg_catalog.>) '0'::pg_catalog.interval)::pg_catalog.text",
            {Param::of_text(request.lease)});
        if (r.rows.at(0).at(0) != std::optional<std::string>("true"))
            throw UserError(
                sqlstate::kInvalidParameterValue, "lease must be a positive interval", {},
                "Pass how long the work may take before another worker takes over, for example interval '5 minutes'.");
    }
    check_scope_usage(spi, ScopeKind::kKeys, request.scope);
    // wait => false bounds the direct insert's wait too: that one goes below.
    if (request.wait) {
        if (auto done = claim_directly(request)) {
            spi.finish();
            return *done;
        }
    }
    ClaimOutcome outcome;
    pg::as_extension_owner([&] {
        if (request.wait) {
            outcome = claim_as_owner(spi, request);
        } else {
            // wait => false: a concurrent, open claim of the key fails at once
            // (55P03) instead of waiting for that transaction to end.
            try {
                pg::with_lock_timeout("1ms", [&] { outcome = claim_as_owner(spi, request); });
            } catch (pg::PgError& e) {
                if (pg::error_sqlstate(e) != sqlstate::kLockNotAvailable)
                    throw;
                throw UserError(sqlstate::kLockNotAvailable,
                                key_in_scope(request.key, request.scope) + " is being claimed by another transaction",
                                {}, "Retry later, or call idem.claim with wait => true to wait for it.");
            }
        }
    });
    spi.finish();
    return outcome;
}

// claim_key, and the token a leased claim drew remembered for this
// session's writes without one (keys/claimed_tokens.hpp).
ClaimOutcome claim_and_remember(const ClaimRequest& request)
{
    const ClaimOutcome outcome = claim_key(request);
    if (outcome.owned && outcome.token)
        keys::remember_claimed_token(request.scope, request.key, *outcome.token);
    return outcome;
}

}  // namespace

bool claim(const ClaimRequest& request)
{
    return claim_and_remember(request).owned;
}

std::optional<std::int64_t> claim_lease(const ClaimRequest& request)
{
    if (!request.lease)
        throw UserError(sqlstate::kNullValueNotAllowed, "lease must not be NULL", {},
                        "A key without a lease is claimed with idem.claim.");
    require_sql(SqlFeature::kKeyTokens, "idem.claim_lease");
    const ClaimOutcome outcome = claim_and_remember(request);
    if (!outcome.owned)
        return std::nullopt;
    if (!outcome.token)
        throw UserError(
            sqlstate::kObjectNotInPrerequisiteState,
            key_in_scope(request.key, request.scope) + " was claimed without a lease earlier in this transaction",
            "Its claim has no lease, so no fencing token.",
            "Claim it with idem.claim_lease only, or keep to idem.claim in this transaction.");
    return outcome.token;
}

void claim_many(const pg::ResultSet& out, const std::vector<std::string>& keys, const std::string& scope)
{
    require_text(scope, "scope");
    for (const auto& k : keys) {
        require_text(k, "every key");
        keys::require_key_size(k, "a key");
    }
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kKeys, scope);
    const BatchHashes batch = batch_hashes(keys, scope);
    pg::as_extension_owner([&] {
        spi.return_rows(out, claim_many_sql(), {Param::of_text(scope), Param::of_text_array(keys)}, true);
        check_hashes_held(spi, scope, batch);
    });
    spi.finish();
}

std::optional<std::string> result(const std::string& key, const std::string& scope)
{
    std::optional<std::string> out;
    keys::on_key_state(key, scope, [&](pg::SpiSession& spi) {
        auto r = spi.query_saved(std::string("SELECT k.result::pg_catalog.text FROM idem.keys k") + keys::where_key(),
                                 {Param::of_text(scope), Param::of_text(key)});
        if (!r.rows.empty())
            out = r.rows[0][0];
    });
    return out;
}

std::optional<std::string> once(const std::string& key, const std::string& query, const std::string& scope,
                                const std::optional<std::string>& fingerprint)
{
    ClaimRequest request;
    request.key = key;
    request.scope = scope;
    request.fingerprint = fingerprint;
    if (!claim(request))
        return result(key, scope);
    // Owned by this transaction: if once() already ran the query in it, the
    // key is complete and its stored result is the answer (never run twice).
    {
        pg::SpiSession spi;
        bool done_here = false;
        std::optional<std::string> stored;
        pg::as_extension_owner([&] {
            auto r = spi.query_saved(std::string("SELECT k.result::pg_catalog.text FROM idem.keys k") +
                                         keys::where_key() + " AND k.completed_at IS NOT NULL",
                                     {Param::of_text(scope), Param::of_text(key)});
            if (!r.rows.empty()) {
                done_here = true;
                stored = r.rows[0][0];
            }
        });
        spi.finish();
        if (done_here)
            return stored;
    }
    // The caller's query runs as the caller, under the caller's search_path.
    pg::SpiSession spi;
    const std::string json = pg::rows_as_json_array(spi, query);
    spi.finish();
    complete(key, json, scope);
    return json;
}

void key_status(const pg::ResultSet& out, const std::string& key, const std::string& scope)
{
    keys::on_key_state(key, scope, [&](pg::SpiSession& spi) {
        spi.return_rows(out,
                        std::string("SELECT CASE WHEN k.state OPERATOR(pg_catalog.=) 'in_progress'"
                                    " AND k.lease_until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()"
                                    " THEN 'expired' ELSE k.state END, k.fingerprint, k.result, k.recovery_point,"
                                    " k.claimed_at, k.completed_at, k.lease_until") +
                            (keys::tokens_installed() ? ", k.token" : "") + " FROM idem.keys k" + keys::where_key(),
                        {Param::of_text(scope), Param::of_text(key)}, true);
    });
}

bool forget(const std::string& key, const std::string& scope)
{
    bool forgotten = false;
    keys::on_key_state(key, scope, [&](pg::SpiSession& spi) {
        auto r = spi.query_saved(std::string("DELETE FROM idem.keys k") + keys::where_key() + " RETURNING true",
                                 {Param::of_text(scope), Param::of_text(key)});
        forgotten = !r.rows.empty();
    });
    return forgotten;
}

std::int64_t purge_keys(const std::string& older_than, const std::optional<std::string>& scope)
{
    pg::SpiSession spi;
    if (pg::interval_sign(spi, older_than) < 0)
        throw UserError(sqlstate::kInvalidParameterValue, "older_than must not be negative", {},
                        "Pass an age, for example interval '30 days'.");
    if (scope) {
        require_text(*scope, "scope");
        check_scope_usage(spi, ScopeKind::kKeys, *scope);
    } else if (!pg::current_user_is_superuser()) {
        throw UserError(sqlstate::kInsufficientPrivilege, "only a superuser may purge keys of every scope", {},
                        "Pass the scope to purge.");
    }
    std::int64_t n = 0;
    pg::as_extension_owner([&] {
        // Keys under a live lease stay; the index on COALESCE(completed_at,
        // claimed_at) keeps this a range scan on millions of keys.
        auto r = spi.query_saved(
            "WITH gone AS (DELETE FROM idem.keys k"
            " WHERE COALESCE(k.completed_at, k.claimed_at) OPERATOR(pg_catalog.<)"
            "  (pg_catalog.now() OPERATOR(pg_catalog.-) $1::pg_catalog.interval)"
            " AND ($2::pg_catalog.text IS NULL OR k.scope OPERATOR(pg_catalog.=) $2)"
            " AND NOT (k.state OPERATOR(pg_catalog.=) 'in_progress'"
            "  AND k.lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())"
            " RETURNING 1) SELECT pg_catalog.count(*)::pg_catalog.text FROM gone",
            {Param::of_text(older_than), Param::of_text(scope)});
        n = std::stoll(r.rows.at(0).at(0).value_or("0"));
    });
    spi.finish();
    return n;
}

}  // namespace pg_idempotent
