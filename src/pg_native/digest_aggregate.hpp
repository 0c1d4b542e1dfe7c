// The aggregate idem._digest_agg(VARIADIC "any"): the v1 checksum of the rows
// it is given, one column per argument, with the same image and the same text
// as the digest receiver (row_digest_receiver.hpp). As an aggregate with a
// combine function it is parallel safe: each worker hashes the rows of its
// share of the scan, and the leader adds the partial sums.
//
// Plain PostgreSQL-style functions, called by the aggregate's SQL-callable
// shims. The transition runs once per row, so it is C-style code like the
// receiver's per-row callback: nothing with a destructor lives in its frame,
// the hashing it calls is noexcept, and an ERROR (detoasting, a cancel)
// unwinds it cleanly.
#pragma once

#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

Datum digest_agg_transition(FunctionCallInfo fcinfo);
Datum digest_agg_combine(FunctionCallInfo fcinfo);
Datum digest_agg_serialize(FunctionCallInfo fcinfo);
Datum digest_agg_deserialize(FunctionCallInfo fcinfo);
Datum digest_agg_final(FunctionCallInfo fcinfo);

// idem._digest_sample_agg(VARIADIC "any"): the same digest, and the sample
// of the same rows' hashes (core/row_sample.hpp) that overwrite_partition
// keeps with the query's preimage: "v1:<count>:<hex> <sample hex>". Its
// workers sample their share; the leader merges the samples.
Datum digest_sample_agg_transition(FunctionCallInfo fcinfo);
Datum digest_sample_agg_combine(FunctionCallInfo fcinfo);
Datum digest_sample_agg_serialize(FunctionCallInfo fcinfo);
Datum digest_sample_agg_deserialize(FunctionCallInfo fcinfo);
Datum digest_sample_agg_final(FunctionCallInfo fcinfo);

// idem._row_hash(VARIADIC "any"): one row's v1 hash, the one the digest
// adds up, as a numeric from 0 to 2^128 - 1. Immutable: Citus runs
// sum(idem._row_hash(...)) on the workers, and the coordinator adds the
// shards' sums (proof/checksum.cpp).
Datum row_hash(FunctionCallInfo fcinfo);

}  // namespace pg_idempotent::pg
