#include "pg_native/target_cache.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/executor.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace pg_idempotent::pg {

namespace {

// claim writes idem.keys, record idem.effects: two targets, and room.
constexpr int kEntries = 4;
CachedTarget* g_entries[kEntries] = {};
bool g_stale[kEntries] = {};

bool same_key(const TargetKey& x, const TargetKey& y)
{
    return x.relid == y.relid && x.specs == y.specs && x.n == y.n && x.allow_defaults == y.allow_defaults &&
           x.a == y.a && x.b == y.b;
}

// Whether the invalidated relation is the entry's table or one of its
// indexes (an index's own invalidation: REINDEX, a changed definition).
// An entry still being built has none yet.
bool names_entry(const CachedTarget& entry, Oid relid)
{
    if (relid == InvalidOid || relid == entry.key.relid)
        return true;
    for (int i = 0; i < entry.nindexes; ++i) {
        if (entry.index_oids[i] == relid)
            return true;
    }
    return false;
}

// Runs while invalidation messages are processed: only notes the change.
void on_relcache(Datum, Oid relid)
{
    for (int i = 0; i < kEntries; ++i) {
        if (g_entries[i] != nullptr && names_entry(*g_entries[i], relid))
            g_stale[i] = true;
    }
}

// The memory went with TopTransactionContext: forget the pointers.
void forget_at_xact_end(XactEvent event, void*)
{
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT) {
        for (int i = 0; i < kEntries; ++i) {
            g_entries[i] = nullptr;
            g_stale[i] = false;
        }
    }
}

// A call of the aborted subtransaction (or of one below it) never ended:
// its entry's slots may name buffers the abort released. Dropped at the
// next use; a call further up the stack, of an outer subtransaction, keeps
// its entry.
void abandon_at_subxact_abort(SubXactEvent event, SubTransactionId aborted, SubTransactionId, void*)
{
    if (event != SUBXACT_EVENT_ABORT_SUB)
        return;
    for (int i = 0; i < kEntries; ++i) {
        if (g_entries[i] != nullptr && g_entries[i]->in_use && g_entries[i]->opened_in >= aborted) {
            g_entries[i]->in_use = false;
            g_stale[i] = true;
        }
    }
}

void drop_at(int i)
{
    MemoryContextDelete(g_entries[i]->memory);
    g_entries[i] = nullptr;
    g_stale[i] = false;
}

// The entry lives in its executor state's memory (es_query_cxt), made
// under parent: one context for the transaction, and one for each call.
CachedTarget* make_entry(const TargetKey& key, MemoryContext parent, bool cached)
{
    MemoryContext const caller = MemoryContextSwitchTo(parent);
    EState* estate = CreateExecutorState();
    MemoryContextSwitchTo(caller);
    MemoryContext memory = estate->es_query_cxt;
    auto* entry = static_cast<CachedTarget*>(MemoryContextAllocZero(memory, sizeof(CachedTarget)));
    entry->key = key;
    entry->memory = memory;
    entry->estate = estate;
    entry->call = AllocSetContextCreate(memory, "pg_idempotent insert call", ALLOCSET_DEFAULT_SIZES);
    entry->at = static_cast<int*>(MemoryContextAllocZero(memory, sizeof(int) * key.n));
    entry->cached = cached;
    return entry;
}

}  // namespace

CachedTarget* cached_target(const TargetKey& key)
{
    for (int i = 0; i < kEntries; ++i) {
        if (g_entries[i] == nullptr || !same_key(g_entries[i]->key, key) || g_entries[i]->in_use)
            continue;
        if (!g_stale[i])
            return g_entries[i];
        drop_at(i);
    }
    return nullptr;
}

CachedTarget* new_target(const TargetKey& key)
{
    int free = -1;
    for (int i = 0; i < kEntries; ++i) {
        if (g_entries[i] != nullptr && !g_entries[i]->in_use && (g_stale[i] || same_key(g_entries[i]->key, key)))
            drop_at(i);
        if (g_entries[i] != nullptr && g_entries[i]->in_use && same_key(g_entries[i]->key, key))
            return make_entry(key, CurrentMemoryContext, false);
        if (g_entries[i] == nullptr && free < 0)
            free = i;
    }
    if (free < 0)
        return make_entry(key, CurrentMemoryContext, false);
    g_entries[free] = make_entry(key, TopTransactionContext, true);
    return g_entries[free];
}

void use_target(CachedTarget* entry)
{
    entry->in_use = true;
    entry->opened_in = GetCurrentSubTransactionId();
}

void release_target(CachedTarget* entry)
{
    entry->in_use = false;
    MemoryContextReset(entry->call);
    if (!entry->cached)
        MemoryContextDelete(entry->memory);
}

void drop_target(CachedTarget* entry)
{
    for (int i = 0; i < kEntries; ++i) {
        if (g_entries[i] == entry) {
            drop_at(i);
            return;
        }
    }
    MemoryContextDelete(entry->memory);
}

void register_target_cache()
{
    CacheRegisterRelcacheCallback(on_relcache, Datum(0));
    RegisterXactCallback(forget_at_xact_end, nullptr);
    RegisterSubXactCallback(abandon_at_subxact_abort, nullptr);
}

}  // namespace pg_idempotent::pg
