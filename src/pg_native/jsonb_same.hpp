// idem._jsonb_same(a jsonb, b jsonb): a = b, answered by comparing the two
// values' bytes first. Two jsonb values with the same bytes are equal; a
// rerun's payloads are the bytes that were stored, so the byte comparison
// settles the usual case without decoding either value, and only values
// that differ in bytes (numbers written with another scale: 1.0 and 1.00)
// are compared by jsonb's own equality. A rerun of record_effects compares
// every payload of its batch: jsonb's equality alone was a sixth of it.
//
// C-style (no C++ object in the frame): jsonb's equality may raise.
#pragma once

#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

Datum jsonb_same(FunctionCallInfo fcinfo);

}  // namespace pg_idempotent::pg
