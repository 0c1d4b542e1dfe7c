#include "pg/unit_lock.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/xlog.h"
#include "commands/extension.h"
#include "storage/lmgr.h"
}

namespace pg_idempotent::pg {

void lock_unit(UnitLockSpace space, std::uint32_t key, UnitLockMode mode)
{
    pg_call([&]() noexcept {
        // A standby takes no locks this strong on objects, and needs none:
        // nothing can be written there, so an overwrite can only skip (or
        // fail on its first write) and there is nothing to serialize.
        if (RecoveryInProgress())
            return;
        const Oid extension = get_extension_oid("pg_idempotent", false);
        LockDatabaseObject(extension, key, static_cast<uint16>(space),
                           mode == UnitLockMode::kShared ? ShareLock : ExclusiveLock);
    });
}

}  // namespace pg_idempotent::pg
