// The lane of an effect: a 32-bit number for its (scope, kind), stored in
// idem.effects.lane and leading the indexes take_effects reads. A
// dispatcher takes the effects of one scope and kind; keyed by the lane,
// an index entry is 24 bytes, however long the scope, kind and key are,
// and a take walks past the entries of the effects delivered since the
// last vacuum in a quarter of the pages (bench/README.md, "The outbox").
//
// Stored, so it must never change between releases or platforms: FNV-1a
// over the bytes of scope, a NUL, kind (test_effect_lane pins values).
// Two pairs that share a lane only share index ranges: take_effects
// compares scope and kind too.
#pragma once

#include <cstdint>
#include <string>

namespace pg_idempotent::core {

std::int32_t effect_lane(const std::string& scope, const std::string& kind) noexcept;

}  // namespace pg_idempotent::core
