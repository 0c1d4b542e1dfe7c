// idem.claim's one hot statement without SPI: the row of a new key inserted
// into idem.keys the way INSERT ... ON CONFLICT (scope, key_hash) DO NOTHING
// inserts it (the executor's own speculative insertion: the same waits, the
// same arbiter, every index of the table maintained), or the row that is
// already there, read in the same step.
//
// Why: through SPI, a claim pays the planner's cached-plan check, a whole
// executor start (ModifyTable, the VALUES projection, RETURNING) and, for a
// key that exists, a second statement to read the row; and the SQL computes
// the row's values (assigning a transaction id) before the conflict check, so
// a duplicate writes a commit record. Here a duplicate assigns no
// transaction id. bench/keys.sh measures the difference.
//
// Used only where it is exactly equivalent; otherwise kUnsupported and the
// caller runs its SQL. Not used: under SERIALIZABLE (the SQL path takes the
// predicate locks), without an active snapshot, when idem.keys has triggers,
// row security, a partitioning, or a column set other than the released one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pg_idempotent::pg {

struct KeyClaim {
    const std::string& scope;
    const std::string& key;
    const std::optional<std::string>& fingerprint;
    const std::optional<std::string>& lease;  // a positive interval, as text
};

// The columns of an existing row that claim decides on.
struct StoredKey {
    std::string state;
    std::optional<std::string> fingerprint;
    bool claimed_by_this_transaction = false;  // claimed_by = this top-level transaction
    bool lease_live = false;                   // lease_until > clock_timestamp()
    bool same_key = true;                      // false: another key with the same md5 (a collision)
};

struct KeyClaimResult {
    enum class Outcome { kInserted, kExists, kUnsupported };
    Outcome outcome = Outcome::kUnsupported;
    StoredKey existing;  // kExists only
    // The fencing token: of the new row (kInserted with a lease), or of the
    // row already there (kExists); none when the row has none, or the table
    // has no token column yet.
    std::optional<std::int64_t> token;
};

// Runs as the current user (claim calls it as the extension owner). Waits for
// a concurrent, open claim of the same key as ON CONFLICT does (lock_timeout
// applies); under REPEATABLE READ a conflicting row this transaction cannot
// see is a serialization failure (40001), as with ON CONFLICT DO NOTHING.
KeyClaimResult insert_claim_row(const KeyClaim& claim);

}  // namespace pg_idempotent::pg
