// When a cached grant decision may be stale: a counter that moves whenever
// what the check reads may have changed, so that scope_grants can keep its
// decisions across transactions (a claim per transaction then costs no
// query) and still see every grant, revoke, role change at once.
#pragma once

#include <cstdint>

namespace pg_idempotent::pg {

// Registers the invalidation callbacks (called once, from _PG_init): the
// counter moves on a relcache invalidation of the watched grant table (its
// trigger sends one for every statement that writes it, so every backend
// hears of a grant or revoke when it commits) or of every relation, and on
// any change of roles (pg_authid: superuser, inherit, drop, rename) or role
// memberships (pg_auth_members), and of the tables subscriptions replicate
// (pg_subscription_rel).
void register_grant_invalidation();

// The current value of the counter.
std::uint64_t grants_generation() noexcept;

// The grant table whose invalidations move the counter (its OID, as
// scope_grants found it).
void watch_grant_table(std::uint32_t relid) noexcept;

}  // namespace pg_idempotent::pg
