// The direct inserts' cache of executor state (target_cache.hpp), set up
// from _PG_init; apart so the entry file needs no executor header.
#pragma once

namespace pg_idempotent::pg {

// Registers the relcache and (sub)transaction callbacks that keep the
// cache true to the catalog and to the transaction (once per backend).
void register_target_cache();

}  // namespace pg_idempotent::pg
