// Waiting dispatchers: idem.listen_effects rings the doorbell of a scope and
// kind (recorders then NOTIFY its channel at commit) and says after which
// transactions' end to look once more (they may have recorded an effect
// without ringing);
// idem.unlisten_effects stops it when the dispatcher has work again.
#include "effects/effect_rows.hpp"
#include "effects/effects.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/spi.hpp"
#include "pg/transactions.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// A recorder that probed before the doorbell rang is still running or has
// committed; the dispatcher looks again once it has ended, in a statement
// of its own (a fresh snapshot, whatever the isolation level). Inside a
// transaction block the LISTEN waits for a COMMIT that may never come (a
// ROLLBACK would keep the doorbell without it), and the look may share the
// block's snapshot: refused. A statement that wrote before it in the same
// transaction has an xid older than the ring: refused too.
void require_own_transaction(pg::SpiSession& spi)
{
    const char* hint = "Call it on its own (autocommit), then take effects once more before waiting.";
    if (pg::in_transaction_block())
        throw UserError(sqlstate::kActiveSqlTransaction, "idem.listen_effects cannot run inside a transaction block",
                        "Its LISTEN takes effect at COMMIT, and the look for effects after it must see what "
                        "committed since.",
                        hint);
    // settle_after must be drawn after the doorbell rang.
    auto r = spi.query_saved("SELECT (pg_catalog.pg_current_xact_id_if_assigned() IS NULL)::pg_catalog.text");
    if (r.rows.at(0).at(0) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInvalidParameterValue,
                        "idem.listen_effects must run before its transaction writes anything",
                        "The xid it answers must be newer than every recorder that missed the doorbell.", hint);
}

// Whether this session holds the doorbell (held once at most: unlocking a
// lock not held only warns).
bool holds_doorbell(pg::SpiSession& spi, const std::string& scope, const std::string& kind)
{
    const std::string sql = std::string("SELECT EXISTS (SELECT FROM pg_catalog.pg_locks l, (SELECT ") +
                            effects::doorbell_keys("$1", "$2") +
                            ") k(k1, k2) WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'"
                            " AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()"
                            " AND l.classid OPERATOR(pg_catalog.=) k.k1::pg_catalog.oid"
                            " AND l.objid OPERATOR(pg_catalog.=) k.k2::pg_catalog.oid"
                            " AND l.objsubid OPERATOR(pg_catalog.=) 2"
                            " AND l.mode OPERATOR(pg_catalog.=) 'ShareLock' AND l.granted)::pg_catalog.text";
    return spi.query_saved(sql, {Param::of_text(scope), Param::of_text(kind)}).rows.at(0).at(0) ==
           std::optional<std::string>("true");
}

// Shared, so that any number of dispatchers wait at once; tried, never
// waited for: a role holding the lock exclusively must not stall a
// dispatcher (it then polls). A recorder's probe holds it for one
// expression, hence three tries.
bool ring_doorbell(pg::SpiSession& spi, const std::string& scope, const std::string& kind)
{
    if (holds_doorbell(spi, scope, kind))
        return true;
    const std::string sql = std::string("SELECT pg_catalog.pg_try_advisory_lock_shared(") +
                            effects::doorbell_keys("$1", "$2") + ")::pg_catalog.text";
    for (int i = 0; i < 3; ++i) {
        if (spi.query_saved(sql, {Param::of_text(scope), Param::of_text(kind)}).rows.at(0).at(0) ==
            std::optional<std::string>("true"))
            return true;
    }
    return false;
}

}  // namespace

void listen_effects(const pg::ResultSet& out, const std::string& kind, const std::string& scope)
{
    effects::require_kind(kind);
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        require_own_transaction(spi);
        spi.execute("LISTEN " + pg::quote_ident(effects::channel_of(kind)));
        const bool rung = ring_doorbell(spi, scope, kind);
        // An xid drawn after the doorbell rang: every recorder that probed
        // before had written its effect, so it has an older xid. Once no
        // transaction older than this one runs, they have all ended.
        spi.return_rows(out, "SELECT $1::pg_catalog.bool, pg_catalog.pg_current_xact_id()", {Param::of_bool(rung)});
    });
}

void unlisten_effects(const std::string& kind, const std::string& scope)
{
    effects::require_kind(kind);
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        if (holds_doorbell(spi, scope, kind))
            spi.query_saved(
                std::string("SELECT pg_catalog.pg_advisory_unlock_shared(") + effects::doorbell_keys("$1", "$2") + ")",
                {Param::of_text(scope), Param::of_text(kind)});
        spi.execute("UNLISTEN " + pg::quote_ident(effects::channel_of(kind)));
    });
}

}  // namespace pg_idempotent
