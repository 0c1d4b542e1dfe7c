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
    bool collatable;  // a column of a collatable type: it hashes under the call's collation
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
    hashers->collatable = false;
    hashers->functions =
        static_cast<FmgrInfo*>(MemoryContextAllocZero(context, sizeof(FmgrInfo) * static_cast<Size>(n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i) {
        const Oid type = get_fn_expr_argtype(fcinfo->flinfo, first + i);
        if (!OidIsValid(type))
            elog(ERROR, "could not determine the type of argument %d of idem._key_hash", first + i + 1);
        TypeCacheEntry* entry = lookup_type_cache(getBaseType(type), TYPECACHE_HASH_EXTENDED_PROC);
        if (!OidIsValid(entry->hash_extended_proc))
            ereport(ERROR,
                    (errcode(ERRCODE_UNDEFINED_FUNCTION),
                     errmsg("type %s has no 64-bit hash function", format_type_be(type)),
                     errhint("Use key columns of types with a hash operator class, or cast them (to text, say).")));
        fmgr_info_cxt(entry->hash_extended_proc, &hashers->functions[i], context);
        hashers->collatable = hashers->collatable || type_is_collatable(type);
    }
    *slot = hashers;
    return hashers;
}

enum class KeyHash { kHashed, kNullKey, kNoCollation };

// The key's hash from the arguments from first on. kNoCollation: collatable
// columns whose collations conflict (the call has none), which the
// statement compares each under its own: no one hash is right for them, and
// the callers then treat every key as a candidate.
KeyHash hash_key(FunctionCallInfo fcinfo, int first, uint64* out, void** slot)
{
    const KeyHashers* hashers = key_hashers(fcinfo, first, slot);
    if (!OidIsValid(PG_GET_COLLATION()) && hashers->collatable)
        return KeyHash::kNoCollation;
    // Without collatable columns no collation is read; C for the ones that ask.
    const Oid collation = OidIsValid(PG_GET_COLLATION()) ? PG_GET_COLLATION() : C_COLLATION_OID;
    uint64 h = 0;
    for (int i = 0; i < hashers->count; ++i) {
        if (PG_ARGISNULL(first + i))
            return KeyHash::kNullKey;
        h ^= DatumGetUInt64(FunctionCall2Coll(&hashers->functions[i], collation, PG_GETARG_DATUM(first + i),
                                              UInt64GetDatum(static_cast<uint64>(i))));
    }
    *out = h;
    return KeyHash::kHashed;
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
// value: the same datum for every row; another datum with other contents
// makes it again).
struct RepeatLookup {
    void* hashers;
    Datum source;  // the argument as given, before any detoasting
    ArrayType* copy;
    uint64* sorted;
    int count;
};

RepeatLookup* repeat_lookup(FunctionCallInfo fcinfo)
{
    auto* lookup = static_cast<RepeatLookup*>(fcinfo->flinfo->fn_extra);
    MemoryContext context = fcinfo->flinfo->fn_mcxt;
    if (lookup == nullptr) {
        lookup = static_cast<RepeatLookup*>(MemoryContextAllocZero(context, sizeof(RepeatLookup)));
        fcinfo->flinfo->fn_extra = lookup;
    }
    const Datum given = PG_GETARG_DATUM(0);
    if (lookup->copy != nullptr && lookup->source == given)
        return lookup;
    ArrayType* repeats = PG_GETARG_ARRAYTYPE_P(0);
    if (lookup->copy != nullptr && VARSIZE(lookup->copy) == VARSIZE(repeats) &&
        memcmp(lookup->copy, repeats, VARSIZE(repeats)) == 0) {
        lookup->source = given;
        return lookup;
    }
    Datum* values = nullptr;
    bool* nulls = nullptr;
    int n = 0;
    deconstruct_array(repeats, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &values, &nulls, &n);
    if (lookup->copy != nullptr) {
        pfree(lookup->copy);
        pfree(lookup->sorted);
    }
    lookup->copy = static_cast<ArrayType*>(MemoryContextAlloc(context, VARSIZE(repeats)));
    memcpy(lookup->copy, repeats, VARSIZE(repeats));
    lookup->sorted = static_cast<uint64*>(MemoryContextAlloc(context, sizeof(uint64) * static_cast<Size>(n + 1)));
    int kept = 0;
    for (int i = 0; i < n; ++i)
        if (!nulls[i])
            lookup->sorted[kept++] = static_cast<uint64>(DatumGetInt64(values[i]));
    std::sort(lookup->sorted, lookup->sorted + kept);
    lookup->count = kept;
    lookup->source = given;
    return lookup;
}

}  // namespace

Datum key_repeats(FunctionCallInfo fcinfo)
{
    if (PG_ARGISNULL(0))
        PG_RETURN_BOOL(true);  // unknown: every row is a candidate
    RepeatLookup* lookup = repeat_lookup(fcinfo);
    uint64 h = 0;
    switch (hash_key(fcinfo, 1, &h, &lookup->hashers)) {
    case KeyHash::kNullKey:
        PG_RETURN_BOOL(false);  // a NULL key repeats nothing (the checks count it)
    case KeyHash::kNoCollation:
        PG_RETURN_BOOL(true);
    case KeyHash::kHashed:
        break;
    }
    PG_RETURN_BOOL(std::binary_search(lookup->sorted, lookup->sorted + lookup->count, h));
}

Datum key_hash(FunctionCallInfo fcinfo)
{
    uint64 h = 0;
    switch (hash_key(fcinfo, 0, &h, &fcinfo->flinfo->fn_extra)) {
    case KeyHash::kNullKey:
        PG_RETURN_NULL();
    case KeyHash::kNoCollation:
        ereport(ERROR, (errcode(ERRCODE_INDETERMINATE_COLLATION),
                        errmsg("could not determine which collation to use for the key's hash"),
                        errhint("Use the COLLATE clause to set the collation explicitly.")));
    case KeyHash::kHashed:
        break;
    }
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
    switch (hash_key(fcinfo, 1, &h, &fcinfo->flinfo->fn_extra)) {
    case KeyHash::kHashed:
        finder->add(h);
        break;
    case KeyHash::kNoCollation:
        finder->give_up();  // unknown: every row is grouped
        break;
    case KeyHash::kNullKey:
        break;
    }
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
