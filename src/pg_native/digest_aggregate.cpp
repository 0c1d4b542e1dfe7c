#include "pg_native/digest_aggregate.hpp"

#include <new>

#include "core/digest.hpp"
#include "core/row_image.hpp"
#include "core/row_sample.hpp"
#include "pg_native/aggregate_context.hpp"
#include "pg_native/row_digest_receiver.hpp"

namespace pg_idempotent::pg {

namespace {

// What the per-row loop needs of one argument, read once per call site.
struct ArgumentInfo {
    int16 typlen;
    bool typbyval;
};

// What the transition needs for every row of one call site of the
// aggregate, made on its first row and kept in the call's fn_extra (the
// executor's memory for the query): the arguments' storage and the hasher.
// The hasher carries nothing from one row to the next, so one serves every
// group. A reset callback of that context destroys it: its destructor frees
// the streaming state of rows longer than its buffer and calls nothing of
// PostgreSQL.
struct CallInfo {
    core::RowHasher* hasher;
    ArgumentInfo* arguments;
    int argument_count;
    MemoryContextCallback destroy;
};

// The transition state of one group, in the aggregate's memory context.
struct DigestAggState {
    core::MultisetDigest digest;

    void add(const core::Digest128& row) noexcept { digest.add(row); }
    void merge(const DigestAggState& other) noexcept { digest.merge(other.digest); }
};

// The same for idem._digest_sample_agg: the digest and the sample of the
// same rows. The sample is stored inline (32 kB), so the state needs no
// destructor either.
struct DigestSampleAggState {
    core::MultisetDigest digest;
    core::RowSampleBuilder sample;

    void add(const core::Digest128& row) noexcept
    {
        digest.add(row);
        sample.add(row);
    }
    void merge(const DigestSampleAggState& other) noexcept
    {
        digest.merge(other.digest);
        sample.merge(other.sample);
    }
};

void destroy_hasher(void* arg)
{
    auto* call = static_cast<CallInfo*>(arg);
    if (call->hasher != nullptr) {
        call->hasher->~RowHasher();
        call->hasher = nullptr;
    }
}

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* caller)
{
    return pg::aggregate_context(fcinfo, caller, "Use idem.checksum or idem.checksum_query.");
}

template <typename State>
State* new_state(MemoryContext context)
{
    void* memory = MemoryContextAlloc(context, sizeof(State));
    return new (memory) State();  // trivially destructible
}

// The arguments' storage, read from the types the call was planned with:
// the arguments from first on (after an aggregate's state: 1).
CallInfo* call_info(FunctionCallInfo fcinfo, int first)
{
    auto* call = static_cast<CallInfo*>(fcinfo->flinfo->fn_extra);
    if (call != nullptr)
        return call;
    MemoryContext context = fcinfo->flinfo->fn_mcxt;
    const int n = PG_NARGS() - first;
    call = static_cast<CallInfo*>(MemoryContextAllocZero(context, sizeof(CallInfo)));
    call->argument_count = n;
    call->arguments = static_cast<ArgumentInfo*>(
        MemoryContextAlloc(context, sizeof(ArgumentInfo) * static_cast<Size>(n > 0 ? n : 1)));
    for (int i = 0; i < n; ++i) {
        const Oid type = get_fn_expr_argtype(fcinfo->flinfo, i + first);
        if (!OidIsValid(type))
            elog(ERROR, "could not determine the type of argument %d of idem._digest_agg", i + 1);
        get_typlenbyval(type, &call->arguments[i].typlen, &call->arguments[i].typbyval);
    }
    void* memory = MemoryContextAlloc(context, sizeof(core::RowHasher));
    call->hasher = new (memory) core::RowHasher();  // noexcept, allocates nothing
    call->destroy.func = destroy_hasher;
    call->destroy.arg = call;
    MemoryContextRegisterResetCallback(context, &call->destroy);
    fcinfo->flinfo->fn_extra = call;
    return call;
}

constexpr int kSerializedSize = 24;  // count, then the sum's high and low halves

void put_u64le(unsigned char* out, uint64 v)
{
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64 get_u64le(const unsigned char* in)
{
    uint64 v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | in[i];
    return v;
}

// The hash of the row given as the arguments from first on (after an
// aggregate's state: 1).
pg_attribute_always_inline core::Digest128 hash_arguments(FunctionCallInfo fcinfo, const char* aggregate, int first = 1)
{
    const CallInfo* call = call_info(fcinfo, first);
    if (call->argument_count != PG_NARGS() - first)
        elog(ERROR, "%s: planned for %d columns, given %d", aggregate, call->argument_count, PG_NARGS() - first);
    // Detoasted copies go to the current context, which the executor resets
    // for every input row. The arguments' array and count are read into
    // locals, as in the digest receiver's loop: the hasher's byte stores may
    // alias anything reached through call.
    core::RowHasher* h = call->hasher;
    const ArgumentInfo* const arguments = call->arguments;
    const int count = call->argument_count;
    h->begin_row(static_cast<uint32>(count));
    for (int i = 0; i < count; ++i) {
        const ArgumentInfo& a = arguments[i];
        feed_column_image(h, PG_GETARG_DATUM(i + first), PG_ARGISNULL(i + first), a.typlen, a.typbyval);
    }
    const core::Digest128 row = h->end_row();
    if (!h->ok())
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory hashing a row"),
                        errhint("Give the server more memory.")));
    return row;
}

void put_digest(unsigned char* p, const core::MultisetDigest& digest)
{
    const core::Digest128 sum = digest.sum();
    put_u64le(p, digest.count());
    put_u64le(p + 8, sum.hi);
    put_u64le(p + 16, sum.lo);
}

core::MultisetDigest get_digest(const unsigned char* p)
{
    core::Digest128 sum;
    sum.hi = get_u64le(p + 8);
    sum.lo = get_u64le(p + 16);
    return core::MultisetDigest::from_parts(sum, get_u64le(p));
}

// "v1:<count>:<hex>", palloc'd, NUL-terminated; room for extra more chars.
char* digest_text(const core::MultisetDigest& digest, std::size_t extra)
{
    const std::size_t room = 64 + extra;
    char* text = static_cast<char*>(palloc(room));
    const core::Digest128 sum = digest.sum();
    snprintf(text, 64, "%s:%llu:%016llx%016llx", core::kChecksumFormat, static_cast<unsigned long long>(digest.count()),
             static_cast<unsigned long long>(sum.hi), static_cast<unsigned long long>(sum.lo));
    return text;
}

// The transition of either aggregate: the row given as the arguments after
// the state, added to the group's state (made on its first row).
template <typename State>
Datum add_row(FunctionCallInfo fcinfo, const char* caller, const char* aggregate)
{
    MemoryContext context = aggregate_context(fcinfo, caller);
    const core::Digest128 row = hash_arguments(fcinfo, aggregate);
    State* state = PG_ARGISNULL(0) ? new_state<State>(context) : reinterpret_cast<State*>(PG_GETARG_POINTER(0));
    state->add(row);
    PG_RETURN_POINTER(state);
}

// The combine function of either aggregate: two partial states as one.
template <typename State>
Datum combine_states(FunctionCallInfo fcinfo, const char* caller)
{
    MemoryContext context = aggregate_context(fcinfo, caller);
    if (PG_ARGISNULL(1)) {
        if (PG_ARGISNULL(0))
            PG_RETURN_NULL();
        PG_RETURN_POINTER(PG_GETARG_POINTER(0));
    }
    const auto* other = reinterpret_cast<const State*>(PG_GETARG_POINTER(1));
    State* state = PG_ARGISNULL(0) ? new_state<State>(context) : reinterpret_cast<State*>(PG_GETARG_POINTER(0));
    state->merge(*other);
    PG_RETURN_POINTER(state);
}

}  // namespace

Datum digest_agg_transition(FunctionCallInfo fcinfo)
{
    return add_row<DigestAggState>(fcinfo, "idem._digest_agg_add", "idem._digest_agg");
}

Datum digest_agg_combine(FunctionCallInfo fcinfo)
{
    return combine_states<DigestAggState>(fcinfo, "idem._digest_agg_combine");
}

Datum digest_agg_serialize(FunctionCallInfo fcinfo)
{
    (void)aggregate_context(fcinfo, "idem._digest_agg_serialize");
    const auto* state = reinterpret_cast<const DigestAggState*>(PG_GETARG_POINTER(0));
    auto* out = static_cast<bytea*>(palloc(VARHDRSZ + kSerializedSize));
    SET_VARSIZE(out, VARHDRSZ + kSerializedSize);
    put_digest(reinterpret_cast<unsigned char*>(VARDATA(out)), state->digest);
    PG_RETURN_BYTEA_P(out);
}

Datum digest_agg_deserialize(FunctionCallInfo fcinfo)
{
    MemoryContext context = aggregate_context(fcinfo, "idem._digest_agg_deserialize");
    const bytea* in = PG_GETARG_BYTEA_PP(0);
    if (VARSIZE_ANY_EXHDR(in) != kSerializedSize)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("invalid idem._digest_agg state: %d bytes, %d expected",
                               static_cast<int>(VARSIZE_ANY_EXHDR(in)), kSerializedSize),
                        errhint("The state comes from another version of the module: rerun the statement.")));
    const auto* p = reinterpret_cast<const unsigned char*>(VARDATA_ANY(in));
    DigestAggState* state = new_state<DigestAggState>(context);
    state->digest = get_digest(p);
    PG_RETURN_POINTER(state);
}

Datum digest_agg_final(FunctionCallInfo fcinfo)
{
    (void)aggregate_context(fcinfo, "idem._digest_agg_final");
    // No row at all: the digest of the empty multiset.
    const core::MultisetDigest empty;
    const core::MultisetDigest& digest =
        PG_ARGISNULL(0) ? empty : reinterpret_cast<const DigestAggState*>(PG_GETARG_POINTER(0))->digest;
    PG_RETURN_TEXT_P(cstring_to_text(digest_text(digest, 0)));
}

Datum digest_sample_agg_transition(FunctionCallInfo fcinfo)
{
    return add_row<DigestSampleAggState>(fcinfo, "idem._digest_sample_agg_add", "idem._digest_sample_agg");
}

Datum digest_sample_agg_combine(FunctionCallInfo fcinfo)
{
    return combine_states<DigestSampleAggState>(fcinfo, "idem._digest_sample_agg_combine");
}

// The digest's 24 bytes, then the sample (RowSampleBuilder::serialize).
Datum digest_sample_agg_serialize(FunctionCallInfo fcinfo)
{
    (void)aggregate_context(fcinfo, "idem._digest_sample_agg_serialize");
    const auto* state = reinterpret_cast<const DigestSampleAggState*>(PG_GETARG_POINTER(0));
    const Size size = VARHDRSZ + kSerializedSize + state->sample.serialized_size();
    auto* out = static_cast<bytea*>(palloc(size));
    SET_VARSIZE(out, size);
    auto* p = reinterpret_cast<unsigned char*>(VARDATA(out));
    put_digest(p, state->digest);
    state->sample.serialize(p + kSerializedSize);
    PG_RETURN_BYTEA_P(out);
}

Datum digest_sample_agg_deserialize(FunctionCallInfo fcinfo)
{
    MemoryContext context = aggregate_context(fcinfo, "idem._digest_sample_agg_deserialize");
    const bytea* in = PG_GETARG_BYTEA_PP(0);
    const std::size_t length = VARSIZE_ANY_EXHDR(in);
    const auto* p = reinterpret_cast<const unsigned char*>(VARDATA_ANY(in));
    DigestSampleAggState* state = new_state<DigestSampleAggState>(context);
    if (length < static_cast<std::size_t>(kSerializedSize) ||
        !state->sample.deserialize(p + kSerializedSize, length - kSerializedSize))
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("invalid idem._digest_sample_agg state (%d bytes)", static_cast<int>(length)),
                        errhint("The state comes from another version of the module: rerun the statement.")));
    state->digest = get_digest(p);
    PG_RETURN_POINTER(state);
}

// "v1:<count>:<hex> <sample hex>" (RowSampleBuilder::hex).
Datum digest_sample_agg_final(FunctionCallInfo fcinfo)
{
    (void)aggregate_context(fcinfo, "idem._digest_sample_agg_final");
    if (PG_ARGISNULL(0)) {
        // No row at all: the empty multiset and its (empty) sample.
        static const core::MultisetDigest empty;
        char* text = digest_text(empty, 20);
        strcat(text, " 0100000000000000");
        PG_RETURN_TEXT_P(cstring_to_text(text));
    }
    const auto* state = reinterpret_cast<const DigestSampleAggState*>(PG_GETARG_POINTER(0));
    char* text = digest_text(state->digest, 1 + state->sample.hex_capacity());
    char* end = text + strlen(text);
    *end++ = ' ';
    auto* scratch = static_cast<std::uint64_t*>(palloc(sizeof(std::uint64_t) * (state->sample.size() + 1)));
    state->sample.hex_into(end, scratch);
    PG_RETURN_TEXT_P(cstring_to_text(text));
}

Datum row_hash(FunctionCallInfo fcinfo)
{
    const core::Digest128 row = hash_arguments(fcinfo, "idem._row_hash", 0);
    char decimal[core::kDigestDecimalSize];  // no destructor: numeric_in may raise
    core::digest_decimal_to(row, decimal);
    return DirectFunctionCall3(numeric_in, CStringGetDatum(decimal), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

}  // namespace pg_idempotent::pg
