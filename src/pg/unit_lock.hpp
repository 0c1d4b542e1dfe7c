// Locks that serialize writers of one unit of work (a table for
// replace_where, a partition for overwrite_partition, a partitioned table for
// swaps, a merge target), which no role can take but the extension's
// functions.
//
// They are heavyweight locks on a "database object" whose class is the OID of
// the pg_idempotent extension itself: no SQL statement locks such an object,
// so unlike an advisory lock key (which anyone can compute and take) a role
// cannot block another role's jobs with them. They wait under lock_timeout,
// take part in deadlock detection, show in pg_locks (locktype object, classid
// the extension's OID) and end with the transaction.
#pragma once

#include <cstdint>

namespace pg_idempotent::pg {

enum class UnitLockSpace : std::uint16_t {
    kTable = 1,              // key: the table's OID (replace_where)
    kPartition = 2,          // key: the partition's OID
    kPartitionedTable = 3,   // key: the parent's OID (shared: rewrites; exclusive: swaps)
    kMergeTarget = 4,        // key: the merge target's OID
    kAppendTarget = 5,       // key: the append target's OID
    kSnapshotTarget = 6,     // key: the snapshot target's OID
    kPartitionCreation = 7,  // key: the parent's OID (overwrite_partition's create_partition)
};

enum class UnitLockMode { kShared, kExclusive };

void lock_unit(UnitLockSpace space, std::uint32_t key, UnitLockMode mode);

}  // namespace pg_idempotent::pg
