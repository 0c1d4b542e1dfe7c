// Delivering effects: a dispatcher takes them (a lease and a fencing token
// each), renews the lease while its call runs, and reports the outcome with
// the token. A report whose token no longer owns the effect changes nothing
// (ID004).
#include "core/effect_lane.hpp"
#include "effects/effect_rows.hpp"
#include "effects/effects.hpp"
#include "pg/errors.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

namespace {

using effects::shown;
using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// Deliverable (pending and due) or left behind (a lease that expired before
// its outcome was reported), skipping the rows another take has locked:
// each kind of row from its own partial index, read by the lane ($7) and
// checked for scope and kind (lanes may be shared); pending ones oldest
// first (ties in index order), expired ones by the lease's end. One OR of
// the two would sort every due row on each take. The clock is read once,
// before, and passed as $6: a volatile clock_timestamp() in the condition
// cannot bound an index scan, so each take read every lease in flight. A
// left-behind effect is taken again with a new token and marked uncertain
// (its call may have happened), or, after its last attempt, is dead
// ("gone": the UPDATE's SET sees the row as it was).
std::string take_sql()
{
    const std::string gone =
        "(e.state OPERATOR(pg_catalog.=) 'leased' AND e.attempts OPERATOR(pg_catalog.>=) e.max_attempts)";
    return "WITH p AS (SELECT e.scope, e.key, e.not_before AS due FROM idem.effects e"
           "  WHERE e.lane OPERATOR(pg_catalog.=) $7 AND e.state OPERATOR(pg_catalog.=) 'pending'"
           "   AND e.not_before OPERATOR(pg_catalog.<=) $6"
           "   AND e.scope OPERATOR(pg_catalog.=) $1 AND e.kind OPERATOR(pg_catalog.=) $2"
           "  ORDER BY e.not_before LIMIT $3 FOR UPDATE SKIP LOCKED),"
           " l AS (SELECT e.scope, e.key, e.not_before AS due FROM idem.effects e"
           "  WHERE e.lane OPERATOR(pg_catalog.=) $7 AND e.lease_until OPERATOR(pg_catalog.<=) $6"
           "   AND e.state OPERATOR(pg_catalog.=) 'leased'"
           "   AND e.scope OPERATOR(pg_catalog.=) $1 AND e.kind OPERATOR(pg_catalog.=) $2"
           "  ORDER BY e.lease_until LIMIT $3 FOR UPDATE SKIP LOCKED),"
           " c AS (SELECT u.scope, u.key FROM (SELECT * FROM p UNION ALL SELECT * FROM l) u ORDER BY u.due, u.key LIMIT $3),"
           " t AS (UPDATE idem.effects e SET"
           "  state = CASE WHEN " +
           gone +
           " THEN 'dead' ELSE 'leased' END,"
           "  uncertain = e.uncertain OR e.state OPERATOR(pg_catalog.=) 'leased',"
           "  last_error = CASE WHEN e.state OPERATOR(pg_catalog.=) 'leased' THEN 'the lease of token '"
           "   OPERATOR(pg_catalog.||) e.token OPERATOR(pg_catalog.||) ' expired before its outcome was reported'"
           "   ELSE e.last_error END,"
           "  attempts = CASE WHEN " +
           gone +
           " THEN e.attempts ELSE e.attempts OPERATOR(pg_catalog.+) 1 END,"
           "  token = CASE WHEN " +
           gone +
           " THEN e.token"
           "   ELSE pg_catalog.nextval('idem.effect_tokens'::pg_catalog.regclass) END,"
           "  lease_until = CASE WHEN " +
           gone +
           " THEN NULL"
           "   ELSE pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) $4::pg_catalog.interval END,"
           "  dispatcher = CASE WHEN " +
           gone +
           " THEN e.dispatcher ELSE $5 END"
           "  FROM c WHERE e.scope OPERATOR(pg_catalog.=) c.scope AND e.key OPERATOR(pg_catalog.=) c.key"
           "  RETURNING e.key, e.payload, e.token, e.attempts, e.uncertain, e.lease_until, e.state, e.not_before)"
           " SELECT t.key, t.payload, t.token, t.attempts, t.uncertain, t.lease_until FROM t"
           " WHERE t.state OPERATOR(pg_catalog.=) 'leased' ORDER BY t.not_before, t.key";
}

void require_lease(pg::SpiSession& spi, const std::string& lease, const char* name)
{
    if (pg::interval_sign(spi, lease) <= 0)
        throw UserError(sqlstate::kInvalidParameterValue, std::string(name) + " must be a positive interval", {},
                        "Give the dispatcher time for one call, such as '30 seconds'; renew it while the call runs.");
}

// ID004, saying why the token no longer owns the effect.
UserError lease_lost(pg::SpiSession& spi, const Report& report)
{
    auto r = spi.query(
        "SELECT e.state, e.token::pg_catalog.text FROM idem.effects e"
        " WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) $2",
        {Param::of_text(report.scope), Param::of_text(report.key)});
    const std::string head = "lease lost: effect \"" + shown(report.key) + "\" in scope \"" + report.scope + "\" ";
    const std::string mine = " (this dispatcher holds token " + std::to_string(report.token) + ")";
    const std::string hint =
        "Report nothing more for this attempt: the effect is the current token's. idem.effect_status shows it.";
    if (r.rows.empty())
        return UserError(sqlstate::kLeaseLost, head + "does not exist" + mine,
                         "It was never recorded, or was purged since (idem.purge_effects).", hint);
    const std::string state = r.rows[0][0].value_or("");
    const std::string token = r.rows[0][1].value_or("none");
    if (token != std::to_string(report.token))
        return UserError(sqlstate::kLeaseLost, head + "was taken over by token " + token + mine,
                         "Another dispatcher took it after the lease of token " + std::to_string(report.token) +
                             " expired (or that token was never this effect's).",
                         hint);
    return UserError(sqlstate::kLeaseLost, head + (state == "done" ? "is already done" : "is " + state) + mine,
                     "Its outcome for token " + std::to_string(report.token) + " was reported before.", hint);
}

void require_report(const Report& report)
{
    effects::require_key(report.key);
}

}  // namespace

void take_effects(const pg::ResultSet& out, const TakeRequest& request)
{
    effects::require_kind(request.kind);
    if (request.n < 1 || request.n > 10000)
        throw UserError(sqlstate::kInvalidParameterValue, "n must be between 1 and 10000", {},
                        "Take as many effects as the dispatcher will call before its leases run out.");
    effects::on_effects(request.scope, [&](pg::SpiSession& spi) {
        require_lease(spi, request.lease, "lease");
        const std::vector<pg::TypedValue> now = spi.query_values("SELECT pg_catalog.clock_timestamp()");
        spi.return_rows_saved(
            out, take_sql(),
            {Param::of_text(request.scope), Param::of_text(request.kind), Param::of_int4(request.n),
             Param::of_text(request.lease), Param::of_text(request.dispatcher), Param::of_value(now.at(0)),
             Param::of_int4(core::effect_lane(request.scope, request.kind))});
    });
}

std::string renew_effect(const Report& report, const std::string& lease)
{
    require_report(report);
    std::string until;
    effects::on_effects(report.scope, [&](pg::SpiSession& spi) {
        require_lease(spi, lease, "lease");
        auto r = spi.query_saved(
            "UPDATE idem.effects e SET lease_until = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+)"
            " $4::pg_catalog.interval WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) $2"
            " AND e.token OPERATOR(pg_catalog.=) $3 AND e.state OPERATOR(pg_catalog.=) 'leased'"
            " RETURNING idem._canonical_text(e.lease_until)",
            {Param::of_text(report.scope), Param::of_text(report.key), Param::of_int8(report.token),
             Param::of_text(lease)});
        if (r.rows.empty())
            throw lease_lost(spi, report);
        until = r.rows[0][0].value_or("");
    });
    return until;
}

void effect_done(const Report& report, const std::optional<std::string>& answer_json)
{
    require_report(report);
    effects::on_effects(report.scope, [&](pg::SpiSession& spi) {
        auto r = spi.query_saved(
            "UPDATE idem.effects e SET state = 'done', answer = $4::pg_catalog.jsonb,"
            " done_at = pg_catalog.clock_timestamp(), lease_until = NULL"
            " WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) $2"
            " AND e.token OPERATOR(pg_catalog.=) $3 AND e.state OPERATOR(pg_catalog.=) 'leased' RETURNING true",
            {Param::of_text(report.scope), Param::of_text(report.key), Param::of_int8(report.token),
             Param::of_text(answer_json)});
        if (r.rows.empty())
            throw lease_lost(spi, report);
    });
}

namespace {

// The batch's rows in its order, with the answers (none when $4 is NULL).
const char* const kDoneBatch =
    "WITH u AS (SELECT u.k, u.t, u.a, u.ord FROM ROWS FROM (pg_catalog.unnest($2::pg_catalog.text[]),"
    "  pg_catalog.unnest($3::pg_catalog.int8[]), pg_catalog.unnest($4::pg_catalog.jsonb[]))"
    "  WITH ORDINALITY AS u(k, t, a, ord)),"
    " d AS (UPDATE idem.effects e SET state = 'done', answer = u.a, done_at = pg_catalog.clock_timestamp(),"
    "  lease_until = NULL FROM u WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) u.k"
    "  AND e.token OPERATOR(pg_catalog.=) u.t AND e.state OPERATOR(pg_catalog.=) 'leased' RETURNING u.ord)"
    " SELECT (SELECT pg_catalog.count(*) FROM d)::pg_catalog.text, l.k, l.t::pg_catalog.text FROM (SELECT 1) one"
    " LEFT JOIN LATERAL (SELECT u.k, u.t FROM u WHERE NOT EXISTS (SELECT FROM d WHERE d.ord OPERATOR(pg_catalog.=) u.ord)"
    "  ORDER BY u.ord LIMIT 1) l ON true";

void require_batch(pg::SpiSession& spi, const pg::TypedValue& keys, const pg::TypedValue& tokens,
                   const pg::TypedValue& answers)
{
    auto r = spi.query_saved(
        "SELECT (pg_catalog.cardinality($1::pg_catalog.text[]) OPERATOR(pg_catalog.=)"
        "  pg_catalog.cardinality($2::pg_catalog.int8[])"
        " AND ($3::pg_catalog.jsonb[] IS NULL OR pg_catalog.cardinality($3::pg_catalog.jsonb[])"
        "  OPERATOR(pg_catalog.=) pg_catalog.cardinality($1::pg_catalog.text[])))::pg_catalog.text,"
        " (pg_catalog.array_position($1::pg_catalog.text[], NULL) IS NULL"
        "  AND pg_catalog.array_position($2::pg_catalog.int8[], NULL) IS NULL)::pg_catalog.text,"
        " ((SELECT pg_catalog.count(DISTINCT k) FROM pg_catalog.unnest($1::pg_catalog.text[]) k)"
        "  OPERATOR(pg_catalog.=) pg_catalog.cardinality($1::pg_catalog.text[]))::pg_catalog.text",
        {Param::of_value(keys), Param::of_value(tokens), Param::of_value(answers)});
    if (r.rows.at(0).at(0) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInvalidParameterValue, "keys, tokens and answers must have one element per effect",
                        {}, "Pass the key and token of each effect taken, in the same order (answers may be NULL).");
    if (r.rows.at(0).at(1) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kNullValueNotAllowed, "keys and tokens must not contain NULL elements", {},
                        "Report the effects as idem.take_effects returned them.");
    if (r.rows.at(0).at(2) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInvalidParameterValue, "keys must not repeat a key",
                        "One report per effect: a key given twice would be refused as reported already.",
                        "Report the effects as idem.take_effects returned them.");
}

}  // namespace

std::int64_t effects_done(const pg::TypedValue& keys, const pg::TypedValue& tokens, const pg::TypedValue& answers,
                          const std::string& scope)
{
    std::int64_t done = 0;
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        require_batch(spi, keys, tokens, answers);
        auto r = spi.query_generic(kDoneBatch, {Param::of_text(scope), Param::of_value(keys), Param::of_value(tokens),
                                                Param::of_value(answers)});
        // One refused: the whole report is (the statement fails, and with
        // it the updates of the others).
        if (r.rows.at(0).at(1))
            throw lease_lost(spi, Report{*r.rows[0][1], std::stoll(r.rows[0][2].value_or("0")), scope});
        done = std::stoll(r.rows[0][0].value_or("0"));
    });
    return done;
}

std::string effect_failed(const Report& report, const std::optional<std::string>& error, bool retry,
                          const std::optional<std::string>& retry_after, bool uncertain)
{
    require_report(report);
    std::string state;
    effects::on_effects(report.scope, [&](pg::SpiSession& spi) {
        if (retry_after) {
            if (pg::interval_sign(spi, *retry_after) < 0)
                throw UserError(sqlstate::kInvalidParameterValue, "retry_after must not be negative", {},
                                "Pass the delay the receiver asked for (its Retry-After), or leave it out.");
        }
        // (OPERATOR() constructs all bind alike, left to right: hence the
        // parentheses.) Retried after 2^(attempts - 1) seconds, at most an hour, times a
        // jitter in [0.5, 1) so that effects that failed together do not
        // all come back together; dead after the last attempt.
        const std::string dead = "($5::pg_catalog.bool IS FALSE OR e.attempts OPERATOR(pg_catalog.>=) e.max_attempts)";
        auto r = spi.query_saved(
            "UPDATE idem.effects e SET"
            " state = CASE WHEN " +
                dead +
                " THEN 'dead' ELSE 'pending' END,"
                " not_before = CASE WHEN " +
                dead +
                " THEN e.not_before ELSE pg_catalog.clock_timestamp()"
                "  OPERATOR(pg_catalog.+) COALESCE($6::pg_catalog.interval, pg_catalog.make_interval(secs =>"
                "   LEAST(3600::pg_catalog.float8, pg_catalog.power(2::pg_catalog.float8,"
                "   LEAST(e.attempts OPERATOR(pg_catalog.-) 1, 12)))"
                "   OPERATOR(pg_catalog.*) (0.5::pg_catalog.float8 OPERATOR(pg_catalog.+) (pg_catalog.random()"
                "   OPERATOR(pg_catalog./) 2::pg_catalog.float8)))) END,"
                " lease_until = NULL, last_error = $4, uncertain = e.uncertain OR $7::pg_catalog.bool"
                " WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) $2"
                " AND e.token OPERATOR(pg_catalog.=) $3 AND e.state OPERATOR(pg_catalog.=) 'leased' RETURNING e.state",
            {Param::of_text(report.scope), Param::of_text(report.key), Param::of_int8(report.token),
             Param::of_text(error), Param::of_bool(retry), Param::of_text(retry_after), Param::of_bool(uncertain)});
        if (r.rows.empty())
            throw lease_lost(spi, report);
        state = r.rows[0][0].value_or("");
    });
    return state;
}

}  // namespace pg_idempotent
