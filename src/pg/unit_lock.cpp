#include "pg/unit_lock.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/xlog.h"
#include "catalog/partition.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
}

namespace pg_idempotent::pg {

namespace {

constexpr AclMode kWrite = ACL_INSERT | ACL_UPDATE | ACL_DELETE | ACL_TRUNCATE;

// Whether the current user may write the relation, directly or through a
// partitioned table it belongs to (writes through the parent are checked on
// the parent only). The owner has every privilege it has not revoked.
bool may_write(Oid relid)
{
    if (pg_class_aclmask(relid, GetUserId(), kWrite, ACLMASK_ANY) != 0)
        return true;
    if (!get_rel_relispartition(relid))
        return false;
    List* ancestors = get_partition_ancestors(relid);
    ListCell* lc = nullptr;
    foreach (lc, ancestors) {
        if (pg_class_aclmask(lfirst_oid(lc), GetUserId(), kWrite, ACLMASK_ANY) != 0)
            return true;
    }
    return false;
}

}  // namespace

void lock_unit(UnitLockSpace space, std::uint32_t key, UnitLockMode mode)
{
    pg_call([&]() noexcept {
        // A standby takes no locks this strong on objects, and needs none:
        // nothing can be written there, so an overwrite can only skip (or
        // fail on its first write) and there is nothing to serialize.
        if (RecoveryInProgress())
            return;
        // Every unit is a relation. A role that may not write it must not
        // hold its lock (in a prepared transaction, until a superuser
        // notices) and make its writers wait: whatever each function checks
        // first, no lock is ever taken before this.
        if (get_rel_relkind(key) != '\0' && !may_write(key))
            ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                            errmsg("permission denied for table %s", get_rel_name(key)),
                            errdetail("pg_idempotent serializes the writers of a table, partition or history "
                                      "table; only a role that may write it takes part."),
                            errhint("Grant the role INSERT, UPDATE or DELETE on the table.")));
        const Oid extension = get_extension_oid("pg_idempotent", false);
        LockDatabaseObject(extension, key, static_cast<uint16>(space),
                           mode == UnitLockMode::kShared ? ShareLock : ExclusiveLock);
    });
}

}  // namespace pg_idempotent::pg
