#include "pg/args.hpp"

#include <new>

#include "core/row_image.hpp"
#include "pg/guard.hpp"
#include "pg_native/row_digest_receiver.hpp"

extern "C" {
#include "utils/jsonb.h"
#include "utils/timestamp.h"
}

namespace pg_idempotent::pg {

void require_arg(FunctionCallInfo fcinfo, int n, const char* name)
{
    if (PG_ARGISNULL(n))
        throw UserError(sqlstate::kNullValueNotAllowed, std::string(name) + " must not be NULL", {},
                        "Pass a value for " + std::string(name) + ".");
}

std::optional<std::string> arg_text(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    const char* s = pg_call([&]() noexcept { return text_to_cstring(PG_GETARG_TEXT_PP(n)); });
    return std::string(s);
}

std::optional<std::uint32_t> arg_oid(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    return static_cast<std::uint32_t>(PG_GETARG_OID(n));
}

std::optional<std::int32_t> arg_int4(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    return static_cast<std::int32_t>(PG_GETARG_INT32(n));
}

std::optional<std::int64_t> arg_int8(FunctionCallInfo fcinfo, int n)
{
    if (n >= PG_NARGS() || PG_ARGISNULL(n))
        return std::nullopt;
    return static_cast<std::int64_t>(PG_GETARG_INT64(n));
}

std::optional<bool> arg_bool(FunctionCallInfo fcinfo, int n)
{
    if (n >= PG_NARGS() || PG_ARGISNULL(n))
        return std::nullopt;
    return static_cast<bool>(PG_GETARG_BOOL(n));
}

std::optional<std::vector<std::string>> arg_text_array(FunctionCallInfo fcinfo, int n, const char* name)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int count = 0;
    pg_call([&]() noexcept {
        ArrayType* arr = PG_GETARG_ARRAYTYPE_P(n);
        deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
    });
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        if (nulls[i])
            throw UserError(sqlstate::kNullValueNotAllowed, std::string(name) + " must not contain NULL elements", {},
                            "Remove the NULLs from " + std::string(name) + ".");
        const char* s = pg_call([&]() noexcept { return text_to_cstring(DatumGetTextPP(elems[i])); });
        out.emplace_back(s);
    }
    return out;
}

std::vector<std::uint32_t> arg_oid_array(FunctionCallInfo fcinfo, int n, const char* name)
{
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int count = 0;
    pg_call([&]() noexcept {
        ArrayType* arr = PG_GETARG_ARRAYTYPE_P(n);
        deconstruct_array(arr, ARR_ELEMTYPE(arr), sizeof(Oid), true, TYPALIGN_INT, &elems, &nulls, &count);
    });
    std::vector<std::uint32_t> out;
    for (int i = 0; i < count; ++i) {
        if (nulls[i])
            throw UserError(sqlstate::kNullValueNotAllowed, std::string(name) + " must not contain NULL elements", {},
                            "Remove the NULLs from " + std::string(name) + ".");
        out.push_back(DatumGetObjectId(elems[i]));
    }
    return out;
}

namespace {

// The row type of the last record seen by this call site, kept in fn_extra
// (the function's own memory context): looked up once per query, not per row.
struct RecordShape {
    Oid type_id;
    int32 typmod;
    TupleDesc desc;
    Datum* values;
    bool* nulls;
    uint32 live;  // columns that are not dropped
};

RecordShape* record_shape(FunctionCallInfo fcinfo, HeapTupleHeader rec)
{
    const Oid type_id = HeapTupleHeaderGetTypeId(rec);
    const int32 typmod = HeapTupleHeaderGetTypMod(rec);
    auto* shape = static_cast<RecordShape*>(fcinfo->flinfo->fn_extra);
    if (shape != nullptr && shape->type_id == type_id && shape->typmod == typmod)
        return shape;
    MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
    if (shape == nullptr)
        shape = static_cast<RecordShape*>(palloc0(sizeof(RecordShape)));
    TupleDesc looked_up = lookup_rowtype_tupdesc(type_id, typmod);
    shape->desc = CreateTupleDescCopy(looked_up);
    ReleaseTupleDesc(looked_up);
    const int natts = shape->desc->natts;
    shape->values = static_cast<Datum*>(palloc(sizeof(Datum) * static_cast<std::size_t>(natts > 0 ? natts : 1)));
    shape->nulls = static_cast<bool*>(palloc(sizeof(bool) * static_cast<std::size_t>(natts > 0 ? natts : 1)));
    shape->live = 0;
    for (int i = 0; i < natts; ++i)
        if (!TupleDescAttr(shape->desc, i)->attisdropped)
            ++shape->live;
    shape->type_id = type_id;
    shape->typmod = typmod;
    fcinfo->flinfo->fn_extra = shape;
    MemoryContextSwitchTo(old);
    return shape;
}

}  // namespace

core::Digest128 arg_record_digest(FunctionCallInfo fcinfo, int n)
{
    // Deform the composite with its own row type, then hash each column with
    // the same feed_column_image the checksum receiver uses: one definition.
    core::RowHasher hasher;  // no allocation for rows that fit its buffer
    core::RowHasher* h = &hasher;
    pg_call([&]() noexcept {
        HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(n);
        RecordShape* shape = record_shape(fcinfo, rec);
        HeapTupleData tuple;
        tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
        ItemPointerSetInvalid(&tuple.t_self);
        tuple.t_tableOid = InvalidOid;
        tuple.t_data = rec;
        heap_deform_tuple(&tuple, shape->desc, shape->values, shape->nulls);
        h->begin_row(shape->live);
        for (int i = 0; i < shape->desc->natts; ++i) {
            Form_pg_attribute att = TupleDescAttr(shape->desc, i);
            if (att->attisdropped)
                continue;  // never part of a row's image
            feed_column_image(h, shape->values[i], shape->nulls[i], att->attlen, att->attbyval);
        }
    });
    const core::Digest128 digest = hasher.end_row();
    if (!hasher.ok())
        throw std::bad_alloc();
    return digest;
}

TypedValue arg_value(FunctionCallInfo fcinfo, int n)
{
    TypedValue v;
    v.type = pg_call([&]() noexcept { return get_fn_expr_argtype(fcinfo->flinfo, n); });
    if (v.type == InvalidOid)
        throw UserError(sqlstate::kDatatypeMismatch,
                        "could not determine the type of argument " + std::to_string(n + 1), {},
                        "Cast the argument to a type, for example '2024-07-07'::date.");
    v.is_null = PG_ARGISNULL(n);
    if (!v.is_null)
        v.datum = static_cast<std::uintptr_t>(PG_GETARG_DATUM(n));
    return v;
}

Datum text_result(const std::string& s)
{
    return pg_call(
        [&]() noexcept { return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size()))); });
}

Datum jsonb_result(const std::string& json_text)
{
    return pg_call([&]() noexcept { return DirectFunctionCall1(jsonb_in, CStringGetDatum(json_text.c_str())); });
}

std::optional<std::string> arg_interval_text(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    const char* s =
        pg_call([&]() noexcept { return DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(n))); });
    return std::string(s);
}

std::optional<std::string> arg_jsonb_text(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    const char* s =
        pg_call([&]() noexcept { return DatumGetCString(DirectFunctionCall1(jsonb_out, PG_GETARG_DATUM(n))); });
    return std::string(s);
}

Datum uuid_result(const core::Digest128& d)
{
    auto* u = pg_call([]() noexcept { return static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t))); });
    core::to_bytes(d, u->data);
    return UUIDPGetDatum(u);
}

}  // namespace pg_idempotent::pg
