// Subtransactions the extension opens inside the caller's transaction, and
// what identifies that transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "pg/errors.hpp"

namespace pg_idempotent::pg {

// Runs fn inside an internal subtransaction that is always rolled back
// afterwards (also when fn throws, before the exception goes on): the
// database is left as it was, except for what is not transactional
// (sequences). The one sanctioned way to undo work in the caller's
// transaction (house rule 4).
void in_rolled_back_subtransaction(const std::function<void()>& fn);

// Runs fn in an internal subtransaction: released when fn succeeds; rolled
// back when fn raises a PostgreSQL error, which is returned (nullopt on
// success; house rule 4: errors are caught only inside such a
// subtransaction). The caller looks at its SQLSTATE and explains it better
// or rethrows it unchanged (`throw *error`: DETAIL, HINT and CONTEXT
// intact); a cancel (57014) and a statement timeout must always be
// rethrown. C++ exceptions other than PgError go on.
std::optional<PgError> try_in_subtransaction(const std::function<void()>& fn);

// Whether the caller is inside BEGIN ... COMMIT (or several statements sent
// at once), not a transaction of its own statement.
bool in_transaction_block();

// The newest full xid assigned so far, as the number xid8 shows (every
// transaction that has an xid now has one at most this; none is assigned).
std::uint64_t newest_assigned_xid();

// An id of the current top-level transaction, for per-transaction caches.
std::uint32_t local_transaction_id();

}  // namespace pg_idempotent::pg
