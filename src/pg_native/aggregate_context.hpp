// The memory context of the aggregate call a support function runs in, for
// the extension's aggregates (digest_aggregate, repeat_aggregate): their
// transition, combine and final functions take internal and work only
// there; called any other way, feature_not_supported with the hint given.
#pragma once

#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* caller, const char* hint);

}  // namespace pg_idempotent::pg
