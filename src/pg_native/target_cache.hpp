// The executor state of a direct-insert target (speculative_insert.hpp),
// kept from one call to the next for the rest of the transaction.
//
// Why: a claim in a loop (a job claiming its batch one key at a time) built
// all of it again for every row: the executor state, the result relation,
// each index's IndexInfo, the slots, and the first evaluation of the CHECK
// constraints and of the age index's expression compiled them again. The
// cache keeps only memory: between calls it holds no relation, lock or
// buffer pin. Every call opens the table and its indexes as before (their
// locks and references are the call's) and uses the cached state only if
// the relcache hands back the same relations and nothing invalidated them
// since.
//
// Lifetime: the top-level transaction (the memory is a child of
// TopTransactionContext). An entry is dropped, and built again by the next
// call, when a relcache invalidation names the table or one of its indexes
// (DDL of this session or another), or when the subtransaction of a call
// that used it aborted (an error, caught by a savepoint): its slots may name
// buffers that the abort released.
#pragma once

#include "pg/postgres.hpp"
#include "pg_native/speculative_insert.hpp"
#include "pg_native/target_cache_setup.hpp"

namespace pg_idempotent::pg {

// What a target was opened for; an entry serves exactly one.
struct TargetKey {
    Oid relid;
    const ColumnSpec* specs;
    int n;
    bool allow_defaults;
    int a;
    int b;
};

struct CachedTarget {
    TargetKey key;
    MemoryContext memory;  // everything below: the executor state's own
                           // (es_query_cxt), a child of TopTransactionContext
    MemoryContext call;    // one call's allocations, reset when it ends
    Relation rel;          // as the relcache handed it when built
    int nindexes;
    Oid* index_oids;            // never read through a cached Relation: one
                                // invalidated may be freed
    int* at;                    // key.n entries
    bool calls_user_functions;  // a CHECK calls a function not built in
    EState* estate;
    ResultRelInfo* rri;
    List* arbiters;
    TupleTableSlot* slot;
    TupleTableSlot* found;
    bool keep;    // every index a btree: the state may serve the next call
    bool cached;  // kept for the next call; else this call's alone
    bool in_use;  // a call has it and has not ended
    SubTransactionId opened_in;
};

// The entry for the key, if one is still good and no call has it; nullptr
// otherwise (a stale entry is dropped here).
CachedTarget* cached_target(const TargetKey& key);

// A new, empty entry for the key (its memory contexts made): cached,
// replacing a stale one; or, when a call (one that is running, further up
// the stack) has the key's entry or every place is taken, this call's
// alone, in the caller's memory.
CachedTarget* new_target(const TargetKey& key);

// Marks the entry in use by a call of the current subtransaction.
void use_target(CachedTarget* entry);

// The call ended: a cached entry is free for the next one, any other is
// deleted. Drop instead deletes any entry (it holds nothing but memory).
void release_target(CachedTarget* entry);
void drop_target(CachedTarget* entry);

}  // namespace pg_idempotent::pg
