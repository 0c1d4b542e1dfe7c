// The doorbells of waiting dispatchers: session-level locks that only the
// extension's functions take (an advisory lock tag whose fourth field is 3,
// which no SQL function builds: pg_advisory_lock's tags use 1 and 2), so no
// role can ring, block or hold another's doorbell by computing its key.
//
// An idle dispatcher holds its doorbell in ShareLock; a recorder probes it in
// RowExclusiveLock, which conflicts with ShareLock but not with itself, so
// any number of dispatchers wait at once and recorders never disturb each
// other. The name (scope and kind) is hashed to 64 bits: two names that
// collide only ring each other's doorbells (a NOTIFY too many).
#pragma once

#include <string>

namespace pg_idempotent::pg {

// Takes the doorbell for the session, without waiting (false when a
// recorder's probe holds it that instant). Held at most once.
bool try_hold_doorbell(const std::string& name);

// Whether this session holds the doorbell.
bool holds_doorbell(const std::string& name);

// Releases this session's hold (nothing when it holds none).
void release_doorbell(const std::string& name);

// Whether some session holds the doorbell (a dispatcher waits): the probe
// takes and at once releases the conflicting mode, never waiting.
bool doorbell_held(const std::string& name);

}  // namespace pg_idempotent::pg
