#include "pg/args.hpp"

#include "core/row_image.hpp"
#include "pg/guard.hpp"
#include "pg/row_digest_receiver.hpp"

namespace pg_idempotent::pg {

void require_arg(FunctionCallInfo fcinfo, int n, const char* name)
{
    if (PG_ARGISNULL(n))
        throw UserError(sqlstate::kNullValueNotAllowed, std::string(name) + " must not be NULL");
}

std::optional<std::string> arg_text(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    const char* s = pg_call([&] { return text_to_cstring(PG_GETARG_TEXT_PP(n)); });
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

std::optional<bool> arg_bool(FunctionCallInfo fcinfo, int n)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    return static_cast<bool>(PG_GETARG_BOOL(n));
}

std::optional<std::vector<std::string>> arg_text_array(FunctionCallInfo fcinfo, int n,
                                                       const char* name)
{
    if (PG_ARGISNULL(n))
        return std::nullopt;
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int count = 0;
    pg_call([&] {
        ArrayType* arr = PG_GETARG_ARRAYTYPE_P(n);
        deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
    });
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        if (nulls[i])
            throw UserError(sqlstate::kNullValueNotAllowed,
                            std::string(name) + " must not contain NULL elements");
        const char* s = pg_call([&] { return text_to_cstring(DatumGetTextPP(elems[i])); });
        out.emplace_back(s);
    }
    return out;
}

core::Digest128 arg_record_digest(FunctionCallInfo fcinfo, int n)
{
    // Deform the composite with its own row type, then hash each column with
    // the same feed_column_image the checksum receiver uses: one definition.
    int natts = 0;
    Datum* values = nullptr;
    bool* nulls = nullptr;
    TupleDesc desc = nullptr;
    pg_call([&] {
        HeapTupleHeader rec = PG_GETARG_HEAPTUPLEHEADER(n);
        TupleDesc looked_up = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec),
                                                     HeapTupleHeaderGetTypMod(rec));
        desc = CreateTupleDescCopy(looked_up);
        ReleaseTupleDesc(looked_up);
        HeapTupleData tuple;
        tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
        ItemPointerSetInvalid(&tuple.t_self);
        tuple.t_tableOid = InvalidOid;
        tuple.t_data = rec;
        natts = desc->natts;
        values = static_cast<Datum*>(palloc(sizeof(Datum) * static_cast<std::size_t>(natts > 0 ? natts : 1)));
        nulls = static_cast<bool*>(palloc(sizeof(bool) * static_cast<std::size_t>(natts > 0 ? natts : 1)));
        heap_deform_tuple(&tuple, desc, values, nulls);
    });
    core::RowHasher hasher;
    // Dropped columns of a table's row type are not part of the row image.
    std::uint32_t live = 0;
    for (int i = 0; i < natts; ++i)
        if (!TupleDescAttr(desc, i)->attisdropped)
            ++live;
    hasher.begin_row(live);
    core::RowHasher* h = &hasher;
    pg_call([&] {
        for (int i = 0; i < natts; ++i) {
            Form_pg_attribute att = TupleDescAttr(desc, i);
            if (att->attisdropped)
                continue;
            feed_column_image(h, values[i], nulls[i], att->attlen, att->attbyval);
        }
    });
    return hasher.end_row();
}

Datum text_result(const std::string& s)
{
    return pg_call([&] {
        return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
    });
}

Datum uuid_result(const core::Digest128& d)
{
    auto* u = pg_call([] { return static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t))); });
    core::to_bytes(d, u->data);
    return UUIDPGetDatum(u);
}

}  // namespace pg_idempotent::pg
