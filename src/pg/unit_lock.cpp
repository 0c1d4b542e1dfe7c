#include "pg/unit_lock.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "commands/extension.h"
#include "storage/lmgr.h"
}

namespace pg_idempotent::pg {

void lock_unit(UnitLockSpace space, std::uint32_t key, UnitLockMode mode)
{
    pg_call([&] {
        const Oid extension = get_extension_oid("pg_idempotent", false);
        LockDatabaseObject(extension, key, static_cast<uint16>(space),
                           mode == UnitLockMode::kShared ? ShareLock : ExclusiveLock);
    });
}

}  // namespace pg_idempotent::pg
