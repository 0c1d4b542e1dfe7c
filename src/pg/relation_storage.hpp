// A table's rows replaced by another table's, storage for storage, the way
// CLUSTER and VACUUM FULL put a rewritten heap in place: the table keeps its
// OID and everything attached to it (indexes, constraints, triggers, grants,
// policies, publication memberships, comments, dependent views, its place in
// its partitioned table), so nothing is detached or attached and no other
// relation is locked.
#pragma once

#include <cstdint>

namespace pg_idempotent::pg {

// target takes the storage of staging, a plain table built in this
// transaction with the same physical columns (attnum for attnum, dropped
// ones included), which is then dropped with target's old storage. target's
// indexes are rebuilt from the new rows, checking its unique and exclusion
// constraints. The caller holds ACCESS EXCLUSIVE on both, has checked the
// rows against every other constraint of target, and owns target.
// Errors: 55006 when this session still uses target (an open cursor, a
// pending trigger event); 55000 when the columns differ.
void replace_storage(std::uint32_t target, std::uint32_t staging);

}  // namespace pg_idempotent::pg
