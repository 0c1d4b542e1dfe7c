// Waiting dispatchers: idem.listen_effects rings the doorbell of a scope and
// kind (recorders then NOTIFY its channel at commit) and says after which
// transactions' end to look once more (they may have recorded an effect
// without ringing);
// idem.unlisten_effects stops it when the dispatcher has work again.
#include "effects/effect_rows.hpp"
#include "effects/effects.hpp"
#include "pg/catalog.hpp"
#include "pg/doorbell_lock.hpp"
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
// transaction block the LISTEN waits for a COMMIT that may never come, and
// a ROLLBACK (of the block, or of a subtransaction such as a PL/pgSQL
// block with EXCEPTION) would undo the LISTEN but keep the doorbell, which
// is not transactional; the look may share the block's snapshot: refused.
void require_own_transaction()
{
    if (pg::in_transaction_block())
        throw UserError(sqlstate::kActiveSqlTransaction, "idem.listen_effects cannot run inside a transaction block",
                        "Its LISTEN takes effect at COMMIT (a rollback, also of a subtransaction, would undo it "
                        "but keep the doorbell), and the look for effects after it must see what committed since.",
                        "Call it on its own (autocommit), then take effects once more before waiting.");
}

// Shared, so that any number of dispatchers wait at once; tried, never
// waited for. A recorder's probe holds it for an instant, hence three
// tries; a dispatcher that still could not ring polls.
bool ring_doorbell(const std::string& name)
{
    for (int i = 0; i < 3; ++i) {
        if (pg::try_hold_doorbell(name))
            return true;
    }
    return false;
}

}  // namespace

void listen_effects(const pg::ResultSet& out, const std::string& kind, const std::string& scope)
{
    effects::require_kind(kind);
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        require_own_transaction();
        spi.execute("LISTEN " + pg::quote_ident(effects::channel_of(kind)));
        const bool rung = ring_doorbell(effects::doorbell_of(scope, kind));
        // Read after the doorbell rang: every recorder that probed before
        // had written its effect, so its xid is at most this one. Once no
        // transaction this old runs, they have all ended. No xid of its
        // own: an idle dispatcher's transaction need not flush a commit.
        spi.return_rows(out, "SELECT $1::pg_catalog.bool, $2::pg_catalog.xid8",
                        {Param::of_bool(rung), Param::of_text(std::to_string(pg::newest_assigned_xid()))});
    });
}

void unlisten_effects(const std::string& kind, const std::string& scope)
{
    effects::require_kind(kind);
    effects::on_effects(scope, [&](pg::SpiSession& spi) {
        pg::release_doorbell(effects::doorbell_of(scope, kind));
        spi.execute("UNLISTEN " + pg::quote_ident(effects::channel_of(kind)));
    });
}

}  // namespace pg_idempotent
