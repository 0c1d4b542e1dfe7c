#include "pg_native/repeat_aggregate.hpp"

#include <algorithm>

#include <new>

#include "catalog/pg_collation.h"
#include "core/repeat_hashes.hpp"
#include "pg_native/aggregate_context.hpp"

namespace pg_idempotent::pg {

namespace {

// The hash functions of one call site's arguments, looked up on its first
// row and kept in its fn_extra (the executor's memory for the query).
struct KeyHashers {
    int count;
    FmgrInfo* functions;
};

const KeyHashers* key_hashers(FunctionCallInfo fcinfo, int first, void** slot)
{
    auto* hashers = static_cast<KeyHashers*>(*slot);
    if (hashers != nullptr)
        return hashers;
    MemoryContext context = fcinfo->flinfo->fn_mcxt;
    const int n = PG_NARGS() - first;
    hashers = static_cast<KeyHashers*>(MemoryContextAlloc(context, sizeof(KeyHashers)));
    hashers->count = n;
    hashers->functions =
        static_cast<FmgrInfo*>(MemoryContextAllocZero(context, sizeof(FmgrInfo) * static_cast<Size>(n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i) {
        const Oid type = get_fn_expr_argtype(fcinfo->flinfo, first + i);
        if (!OidIsValid(type))
            elog(ERROR, "could not determine the type of argument %d of idem._key_hash", first + i + 1);
        TypeCacheEntry* entry = lookup_type_cache(getBaseType(type), TYPECACHE_HASH_EXTENDED_PROC);
        if (!OidIsValid(entry->hash_extended_proc))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                            errmsg("type %s has no 64-bit hash function", format_type_be(type))));
        fmgr_info_cxt(entry->hash_extended_proc, &hashers->functions[i], context);
    }
    *slot = hashers;
    return hashers;
}

// The key's hash from the arguments from first on; false for a NULL column.
bool hash_key(FunctionCallInfo fcinfo, int first, uint64* out, void** slot)
{
    const KeyHashers* hashers = key_hashers(fcinfo, first, slot);
    const Oid collation = OidIsValid(PG_GET_COLLATION()) ? PG_GET_COLLATION() : C_COLLATION_OID;
    uint64 h = 0;
    for (int i = 0; i < hashers->count; ++i) {
        if (PG_ARGISNULL(first + i))
            return false;
        h ^= DatumGetUInt64(FunctionCall2Coll(&hashers->functions[i], collation, PG_GETARG_DATUM(first + i),
                                              UInt64GetDatum(static_cast<uint64>(i))));
    }
    *out = h;
    return true;
}

void* allocate_in(void* context, std::size_t bytes)
{
    return MemoryContextAllocHuge(static_cast<MemoryContext>(context), bytes);
}

void release(void*, void* memory)
{
    pfree(memory);
}

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* caller)
{
    return pg::aggregate_context(fcinfo, caller, "idem._repeat_hashes is internal to idem.merge and idem.append.");
}

// What idem._key_repeats keeps for its call site: the key's hashers and the
// repeated hashes sorted, made from the first row's array (an InitPlan's
// value: the same for every row; remade if another array comes).
struct RepeatLookup {
    void* hashers;
    ArrayType* source;
    uint64* sorted;
    int count;
};

RepeatLookup* repeat_lookup(FunctionCallInfo fcinfo, ArrayType* repeats)
{
    auto* lookup = static_cast<RepeatLookup*>(fcinfo->flinfo->fn_extra);
    MemoryContext context = fcinfo->flinfo->fn_mcxt;
    if (lookup == nullptr) {
        lookup = static_cast<RepeatLookup*>(MemoryContextAllocZero(context, sizeof(RepeatLookup)));
        fcinfo->flinfo->fn_extra = lookup;
    }
    if (lookup->source != repeats) {
        Datum* values = nullptr;
        bool* nulls = nullptr;
        int n = 0;
        deconstruct_array(repeats, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &values, &nulls, &n);
        lookup->sorted = static_cast<uint64*>(MemoryContextAlloc(context, sizeof(uint64) * static_cast<Size>(n + 1)));
        int kept = 0;
        for (int i = 0; i < n; ++i)
            if (!nulls[i])
                lookup->sorted[kept++] = static_cast<uint64>(DatumGetInt64(values[i]));
        std::sort(lookup->sorted, lookup->sorted + kept);
        lookup->count = kept;
        lookup->source = repeats;
    }
    return lookup;
}

}  // namespace

Datum key_repeats(FunctionCallInfo fcinfo)
{
    if (PG_ARGISNULL(0))
        PG_RETURN_BOOL(true);  // unknown: every row is a candidate
    RepeatLookup* lookup = repeat_lookup(fcinfo, PG_GETARG_ARRAYTYPE_P(0));
    uint64 h = 0;
    if (!hash_key(fcinfo, 1, &h, &lookup->hashers))
        PG_RETURN_BOOL(false);  // a NULL key repeats nothing (the checks count it)
    PG_RETURN_BOOL(std::binary_search(lookup->sorted, lookup->sorted + lookup->count, h));
}

Datum key_hash(FunctionCallInfo fcinfo)
{
    uint64 h = 0;
    if (!hash_key(fcinfo, 0, &h, &fcinfo->flinfo->fn_extra))
        PG_RETURN_NULL();
    PG_RETURN_INT64(static_cast<int64>(h));
}

Datum repeat_hashes_transition(FunctionCallInfo fcinfo)
{
    MemoryContext context = aggregate_context(fcinfo, "idem._repeat_hashes_add");
    auto* finder = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<core::RepeatHashes*>(PG_GETARG_POINTER(0));
    if (finder == nullptr) {
        finder = new (MemoryContextAlloc(context, sizeof(core::RepeatHashes))) core::RepeatHashes();
        finder->init(core::RepeatAllocator{allocate_in, release, context});
    }
    uint64 h = 0;
    if (hash_key(fcinfo, 1, &h, &fcinfo->flinfo->fn_extra))
        finder->add(h);
    PG_RETURN_POINTER(finder);
}

Datum repeat_hashes_final(FunctionCallInfo fcinfo)
{
    (void)aggregate_context(fcinfo, "idem._repeat_hashes_final");
    auto* finder = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<core::RepeatHashes*>(PG_GETARG_POINTER(0));
    if (finder != nullptr)
        finder->finish();  // sorts the state in place: FINALFUNC_MODIFY = READ_WRITE
    if (finder != nullptr && !finder->known())
        PG_RETURN_NULL();
    const int n = finder == nullptr ? 0 : static_cast<int>(finder->candidate_count());
    Datum* values = static_cast<Datum*>(palloc(sizeof(Datum) * static_cast<Size>(n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i)
        values[i] = Int64GetDatum(static_cast<int64>(finder->candidates()[i]));
    PG_RETURN_ARRAYTYPE_P(construct_array(values, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

}  // namespace pg_idempotent::pg
