// Seeing and managing effects: the state of one by key, the counts of a
// scope per kind and state, a dead effect retried by hand, delivered
// effects purged by age.
#include "effects/effect_rows.hpp"
#include "effects/effects.hpp"
#include "pg/errors.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

}  // namespace

void effect_status(const pg::ResultSet& out, const std::string& key, const std::string& scope)
{
    effects::require_key(key);
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        spi.return_rows(out,
                        "SELECT e.kind, e.state, e.payload, e.attempts, e.max_attempts, e.token, e.not_before,"
                        " e.lease_until, e.dispatcher, e.uncertain, e.last_error, e.answer, e.recorded_at, e.done_at"
                        " FROM idem.effects e WHERE e.scope OPERATOR(pg_catalog.=) $1"
                        " AND e.key OPERATOR(pg_catalog.=) $2",
                        {Param::of_text(scope), Param::of_text(key)}, true);
    });
}

// A lease that ran out before its outcome was reported shows as 'expired'
// (the next take takes it again); a pending effect not yet due as
// 'waiting'.
void effect_counts(const pg::ResultSet& out, const std::string& scope)
{
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        spi.return_rows(out,
                        "SELECT e.kind, CASE"
                        "  WHEN e.state OPERATOR(pg_catalog.=) 'leased'"
                        "   AND e.lease_until OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp() THEN 'expired'"
                        "  WHEN e.state OPERATOR(pg_catalog.=) 'pending'"
                        "   AND e.not_before OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() THEN 'waiting'"
                        "  ELSE e.state END AS state, pg_catalog.count(*), pg_catalog.min(e.recorded_at)"
                        " FROM idem.effects e WHERE e.scope OPERATOR(pg_catalog.=) $1 GROUP BY 1, 2 ORDER BY 1, 2",
                        {Param::of_text(scope)}, true);
    });
}

void effect_keys(const pg::ResultSet& out, const std::string& scope)
{
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        spi.return_rows(out,
                        "SELECT e.key, e.kind, e.payload FROM idem.effects e WHERE e.scope OPERATOR(pg_catalog.=) $1",
                        {Param::of_text(scope)}, true);
    });
}

bool retry_effect(const std::string& key, const std::string& scope)
{
    effects::require_key(key);
    bool retried = false;
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        auto r = spi.query(
            "UPDATE idem.effects e SET state = 'pending', attempts = 0, not_before = pg_catalog.clock_timestamp(),"
            " lease_until = NULL WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) $2"
            " AND e.state OPERATOR(pg_catalog.=) 'dead' RETURNING e.kind",
            {Param::of_text(scope), Param::of_text(key)});
        retried = !r.rows.empty();
        if (retried)
            effects::wake_dispatchers(scope, r.rows[0][0].value_or(""));
    });
    return retried;
}

std::int64_t purge_effects(const std::string& older_than, const std::string& scope)
{
    std::int64_t purged = 0;
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        if (pg::interval_sign(spi, older_than) < 0)
            throw UserError(sqlstate::kInvalidParameterValue, "older_than must not be negative", {},
                            "Pass how long a delivered effect's key keeps deduplicating, such as '30 days'.");
        purged =
            static_cast<std::int64_t>(spi.execute("DELETE FROM idem.effects e WHERE e.scope OPERATOR(pg_catalog.=) $1"
                                                  " AND e.state OPERATOR(pg_catalog.=) 'done'"
                                                  " AND e.done_at OPERATOR(pg_catalog.<) (pg_catalog.clock_timestamp()"
                                                  " OPERATOR(pg_catalog.-) $2::pg_catalog.interval)",
                                                  {Param::of_text(scope), Param::of_text(older_than)}));
    });
    return purged;
}

}  // namespace pg_idempotent
