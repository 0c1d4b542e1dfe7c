// The trigger function behind idem._grants_changed, for the entry shim
// (it takes PostgreSQL's call frame; families use pg/grant_invalidation.hpp).
#pragma once

#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

// The statement trigger on the grant table: a relcache invalidation of that
// table, sent to every backend when this transaction commits (and seen by
// this one at its next command), which moves their grants_generation().
// Returns the trigger's result; 39P01 when not called as a trigger.
Datum grant_table_changed(FunctionCallInfo fcinfo);

}  // namespace pg_idempotent::pg
