// idem._key_hash(VARIADIC "any") and the aggregate
// idem._repeat_hashes(VARIADIC "any") (core/repeat_hashes.hpp).
//
// _key_hash: a 64-bit hash of a key's columns, each hashed by its type's
// default hash operator family (the function a hash join uses, so keys
// equal by the type's equality hash alike, citext's included), seeded by
// its position, combined by xor; NULL when a column is NULL. With the call's
// collation (a nondeterministic one hashes equal strings alike), or C when
// the key has none: a deterministic collation hashes the bytes.
//
// _repeat_hashes: of the same hashes of a batch's rows, the ones seen more
// than once, as a bigint[] (empty: no key repeats), or NULL when the batch
// was too large or repeated too many keys to tell (then every row is
// grouped exactly). Rows with a NULL key column are skipped: the statement
// counts NULL keys on its own.
//
// C-style like the digest aggregate's transition: the finder is trivially
// destructible and lives in the aggregate's memory context, so an ERROR
// (a cancel) unwinds the per-row frame cleanly.
#pragma once

#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

Datum key_hash(FunctionCallInfo fcinfo);
// idem._key_repeats(repeats bigint[], VARIADIC "any"): whether the key's hash
// is among repeats (sorted once per call site, then a binary search), true
// for every key when repeats is NULL (unknown): tops' filter.
Datum key_repeats(FunctionCallInfo fcinfo);
Datum repeat_hashes_transition(FunctionCallInfo fcinfo);
Datum repeat_hashes_final(FunctionCallInfo fcinfo);

}  // namespace pg_idempotent::pg
