#include "pg/args.hpp"

#include <new>

#include "core/row_image.hpp"
#include "pg/column_image.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "utils/json.h"
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

std::vector<std::string> arg_name_list(FunctionCallInfo fcinfo, int n, const char* name)
{
    const std::optional<std::string> given = arg_text(fcinfo, n);
    if (!given)
        return {};
    const std::size_t first = given->find_first_not_of(" \t\r\n");
    if (first == std::string::npos || (*given)[first] != '{')
        return {*given};
    Datum* elems = nullptr;
    bool* nulls = nullptr;
    int count = 0;
    pg_call([&]() noexcept {
        Oid input = InvalidOid;
        Oid ioparam = InvalidOid;
        getTypeInputInfo(TEXTARRAYOID, &input, &ioparam);  // array_in needs a real FmgrInfo
        const Datum array = OidInputFunctionCall(input, const_cast<char*>(given->c_str()), ioparam, -1);
        deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
    });
    if (count == 0)
        throw UserError(sqlstate::kInvalidParameterValue, std::string(name) + " names no column", {},
                        "Name a column, or several in order: " + std::string(name) + " => '{updated_at,_loaded_at}'.");
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) {
        if (nulls[i])
            throw UserError(sqlstate::kNullValueNotAllowed, std::string(name) + " must not contain NULL elements", {},
                            "Name each column.");
        out.emplace_back(pg_call([&]() noexcept { return TextDatumGetCString(elems[i]); }));
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

namespace pg_idempotent::pg {

namespace {

// The arguments of idem.params: each call argument, or each element of the
// one array of a call that passed VARIADIC ARRAY[...].
std::vector<TypedValue> variadic_values(FunctionCallInfo fcinfo)
{
    std::vector<TypedValue> out;
    const bool spread = pg_call([&]() noexcept { return get_fn_expr_variadic(fcinfo->flinfo); });
    if (spread) {
        if (PG_ARGISNULL(0))
            throw UserError(sqlstate::kNullValueNotAllowed, "the VARIADIC array of idem.params must not be NULL", {},
                            "Pass the values themselves, idem.params(v1, v2, ...).");
        const Oid element =
            pg_call([&]() noexcept { return get_element_type(get_fn_expr_argtype(fcinfo->flinfo, 0)); });
        Datum* values = nullptr;
        bool* nulls = nullptr;
        int count = 0;
        pg_call([&]() noexcept {
            int16 len = 0;
            bool byval = false;
            char align = 'i';
            get_typlenbyvalalign(element, &len, &byval, &align);
            deconstruct_array(PG_GETARG_ARRAYTYPE_P(0), element, len, byval, align, &values, &nulls, &count);
        });
        for (int i = 0; i < count; ++i)
            out.push_back(TypedValue{static_cast<std::uintptr_t>(values[i]), element, nulls[i]});
        return out;
    }
    for (int i = 0; i < PG_NARGS(); ++i) {
        TypedValue v{0, pg_call([&]() noexcept { return get_fn_expr_argtype(fcinfo->flinfo, i); }), PG_ARGISNULL(i)};
        if (v.type == UNKNOWNOID) {  // an untyped literal: its text
            v.type = TEXTOID;
            if (!v.is_null)
                v.datum = pg_call([&]() noexcept {
                    return static_cast<std::uintptr_t>(CStringGetTextDatum(DatumGetCString(PG_GETARG_DATUM(i))));
                });
        } else if (!v.is_null) {
            v.datum = static_cast<std::uintptr_t>(PG_GETARG_DATUM(i));
        }
        if (v.type == InvalidOid)
            throw UserError(sqlstate::kDatatypeMismatch,
                            "could not determine the type of argument " + std::to_string(i + 1) + " of idem.params", {},
                            "Cast the value to a type, for example '2024-07-07'::date.");
        out.push_back(v);
    }
    return out;
}

// A type whose values idem.params can carry: one with an input function,
// not a pseudo-type (record, anyelement, cstring ...).
void require_bindable_type(Oid type)
{
    const char kind = pg_call([&]() noexcept { return get_typtype(type); });
    // A dropped type's OID (a regtype[] kept in a table): no name to show.
    if (kind == '\0')
        throw UserError(sqlstate::kUndefinedObject,
                        "params names a type that does not exist (OID " + std::to_string(type) + ")", {},
                        "Make params with idem.params(v1, v2, ...) where the job runs.");
    if (kind == TYPTYPE_PSEUDO)
        throw UserError(sqlstate::kInvalidParameterValue,
                        "idem.params cannot carry a value of type " + type_display(type), {},
                        "Cast the value to a type with an input function: text, a number, a date, a row type.");
}

std::string history_json(const std::vector<TypedValue>& types, const std::vector<std::optional<std::string>>& texts)
{
    const char* json = pg_call([&]() noexcept {
        StringInfoData buf;
        initStringInfo(&buf);
        appendStringInfoChar(&buf, '[');
        const std::size_t shown = texts.size() < 20 ? texts.size() : 20;
        for (std::size_t i = 0; i < shown; ++i) {
            appendStringInfoString(&buf, i == 0 ? "{\"type\": " : ", {\"type\": ");
            escape_json(&buf, format_type_be(types[i].type));
            appendStringInfoString(&buf, ", \"value\": ");
            if (!texts[i]) {
                appendStringInfoString(&buf, "null");
            } else {
                const char* v = texts[i]->c_str();
                const int len = static_cast<int>(texts[i]->size());
                const int cut = pg_mbcharcliplen(v, len, 200);
                char* clipped = pnstrdup(v, cut);
                escape_json(&buf, cut < len ? psprintf("%s...", clipped) : clipped);
            }
            appendStringInfoChar(&buf, '}');
        }
        if (texts.size() > shown)
            appendStringInfo(&buf, ", {\"more\": %d}", static_cast<int>(texts.size() - shown));
        appendStringInfoChar(&buf, ']');
        return buf.data;
    });
    return json;
}

}  // namespace

QueryParams arg_query_params(FunctionCallInfo fcinfo, int n)
{
    QueryParams out;
    if (PG_NARGS() <= n || PG_ARGISNULL(n))
        return out;
    Datum* types = nullptr;
    Datum* texts = nullptr;
    bool* type_nulls = nullptr;
    bool* text_nulls = nullptr;
    int type_count = 0;
    int text_count = 0;
    pg_call([&]() noexcept {
        HeapTupleHeader row = PG_GETARG_HEAPTUPLEHEADER(n);
        bool null_types = false;
        bool null_texts = false;
        const Datum t = GetAttributeByNum(row, 1, &null_types);
        const Datum v = GetAttributeByNum(row, 2, &null_texts);
        if (!null_types)
            deconstruct_array(DatumGetArrayTypeP(t), REGTYPEOID, sizeof(Oid), true, TYPALIGN_INT, &types, &type_nulls,
                              &type_count);
        if (!null_texts)
            deconstruct_array(DatumGetArrayTypeP(v), TEXTOID, -1, false, TYPALIGN_INT, &texts, &text_nulls,
                              &text_count);
    });
    if (type_count != text_count)
        throw UserError(
            sqlstate::kInvalidParameterValue,
            "params has " + std::to_string(type_count) + " types and " + std::to_string(text_count) + " values", {},
            "Make params with idem.params(v1, v2, ...).");
    std::vector<TypedValue> kinds;
    std::vector<std::optional<std::string>> shown;
    for (int i = 0; i < type_count; ++i) {
        if (type_nulls[i])
            throw UserError(sqlstate::kNullValueNotAllowed, "params has a NULL type", {},
                            "Make params with idem.params(v1, v2, ...).");
        const Oid type = DatumGetObjectId(types[i]);
        require_bindable_type(type);
        std::optional<std::string> canonical;
        if (!text_nulls[i])
            canonical = std::string(pg_call([&]() noexcept { return TextDatumGetCString(texts[i]); }));
        TypedValue value = canonical ? parse_canonical(*canonical, type) : TypedValue{0, type, true};
        out.values.push_back(Param::of_value(value));
        kinds.push_back(value);
        shown.push_back(canonical);
    }
    out.history_json = history_json(kinds, shown);
    return out;
}

Datum query_params_result(FunctionCallInfo fcinfo)
{
    const std::vector<TypedValue> values = variadic_values(fcinfo);
    const int n = static_cast<int>(values.size());
    Datum* types = pg_call([&]() noexcept { return static_cast<Datum*>(palloc(sizeof(Datum) * (n > 0 ? n : 1))); });
    Datum* texts = pg_call([&]() noexcept { return static_cast<Datum*>(palloc(sizeof(Datum) * (n > 0 ? n : 1))); });
    bool* nulls = pg_call([&]() noexcept { return static_cast<bool*>(palloc(sizeof(bool) * (n > 0 ? n : 1))); });
    for (int i = 0; i < n; ++i) {
        const TypedValue& v = values[static_cast<std::size_t>(i)];
        require_bindable_type(v.type);
        types[i] = ObjectIdGetDatum(v.type);
        nulls[i] = v.is_null;
        texts[i] = 0;
        if (!v.is_null) {
            const std::string canonical = canonical_text(v);
            texts[i] = pg_call([&]() noexcept { return CStringGetTextDatum(canonical.c_str()); });
        }
    }
    return pg_call([&]() noexcept {
        TupleDesc desc = nullptr;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "idem.params must return a composite type");
        desc = BlessTupleDesc(desc);
        int dims[1] = {n};
        int lbs[1] = {1};
        Datum fields[2] = {
            PointerGetDatum(construct_array(types, n, REGTYPEOID, sizeof(Oid), true, TYPALIGN_INT)),
            PointerGetDatum(construct_md_array(texts, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT))};
        bool field_nulls[2] = {false, false};
        return HeapTupleGetDatum(heap_form_tuple(desc, fields, field_nulls));
    });
}

}  // namespace pg_idempotent::pg
