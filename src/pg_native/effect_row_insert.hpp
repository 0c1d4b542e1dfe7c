// idem.record_effect's one statement without SPI: the effect's row inserted
// into idem.effects as INSERT ... ON CONFLICT (scope, key) DO NOTHING
// inserts it (pg_native/speculative_insert), or found there.
//
// Its values are the function's own, checked before (key and kind
// lengths, attempts): the released table has no CHECK constraint, and one
// added, or a NOT NULL column left NULL, is checked by the executor as the
// SQL would check it.
//
// Used only where it is exactly equivalent; otherwise kUnsupported and the
// caller runs its SQL: under SERIALIZABLE, without an active snapshot, when
// idem.effects has triggers, row security, a partitioning, or a column set
// other than the released one. The columns the SQL leaves to their
// defaults get the released defaults' values.
#pragma once

#include <cstdint>
#include <string>

#include "pg/values.hpp"

namespace pg_idempotent::pg {

struct EffectRow {
    const std::string& scope;
    const std::string& key;
    const std::string& kind;
    const std::string& payload;    // jsonb, as text
    const TypedValue& not_before;  // timestamptz; NULL: now()
    std::int32_t max_attempts;
    std::int32_t lane;  // core::effect_lane(scope, kind)
    // Whether the caller pinned search_path (pg::as_extension_owner): a
    // CHECK constraint added to idem.effects is evaluated only then, since
    // it may call a function that looks names up (kUnsupported otherwise).
    bool search_path_pinned;
};

struct EffectInsert {
    enum class Outcome { kInserted, kExists, kUnsupported };
    Outcome outcome = Outcome::kUnsupported;
    bool due = false;  // kInserted: not_before <= now()
};

// Runs as the current user (record_effect calls it as the extension
// owner). Waits for a concurrent, open record of the same key as ON
// CONFLICT does; a key recorded by a transaction this snapshot cannot see
// is kExists (the caller's read finds nothing and says so).
EffectInsert insert_effect_row(const EffectRow& row);

}  // namespace pg_idempotent::pg
