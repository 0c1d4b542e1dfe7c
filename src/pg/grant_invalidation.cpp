#include "pg/grant_invalidation.hpp"

#include "pg/grant_trigger.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "commands/trigger.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace pg_idempotent::pg {

namespace {

std::uint64_t g_generation = 1;
Oid g_grant_table = InvalidOid;

// Callbacks run while invalidation messages are processed: they may not
// look anything up, only note that something changed.
void on_relcache(Datum, Oid relid)
{
    if (relid == InvalidOid || relid == g_grant_table)
        ++g_generation;
}

void on_syscache(Datum, int, uint32)
{
    ++g_generation;
}

}  // namespace

void register_grant_invalidation()
{
    CacheRegisterRelcacheCallback(on_relcache, Datum(0));
    CacheRegisterSyscacheCallback(AUTHOID, on_syscache, Datum(0));
    CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, on_syscache, Datum(0));
    // A subscription that starts or stops replicating the grant table
    // decides whether decisions may be cached at all (scope_grants.cpp).
    CacheRegisterSyscacheCallback(SUBSCRIPTIONRELMAP, on_syscache, Datum(0));
}

std::uint64_t grants_generation() noexcept
{
    return g_generation;
}

void watch_grant_table(std::uint32_t relid) noexcept
{
    if (g_grant_table != relid) {
        g_grant_table = relid;
        ++g_generation;
    }
}

Datum grant_table_changed(FunctionCallInfo fcinfo)
{
    return pg_call([&]() noexcept {
        if (!CALLED_AS_TRIGGER(fcinfo))
            ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                            errmsg("idem._grants_changed() is a trigger function"),
                            errhint("It runs as the statement trigger on idem.usage_grant_rows; change grants "
                                    "with idem.grant_usage and idem.revoke_usage.")));
        const auto* trigger = reinterpret_cast<TriggerData*>(fcinfo->context);
        CacheInvalidateRelcacheByRelid(RelationGetRelid(trigger->tg_relation));
        return PointerGetDatum(nullptr);
    });
}

}  // namespace pg_idempotent::pg
