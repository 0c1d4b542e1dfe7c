#include "pg/values.hpp"

#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/settings.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace pg_idempotent::pg {

namespace {

// The canonical settings (docs/checkpoints.md).
const Settings kCanonical = {
    {"DateStyle", "ISO, YMD"},   {"TimeZone", "UTC"},     {"IntervalStyle", "postgres"},
    {"extra_float_digits", "1"}, {"bytea_output", "hex"},
};

}  // namespace

void with_canonical_settings(const std::function<void()>& fn)
{
    with_settings(kCanonical, fn);
}

std::uint32_t array_type(std::uint32_t type)
{
    return pg_call([&]() noexcept { return get_array_type(type); });
}

bool type_is_ordered(std::uint32_t type)
{
    return pg_call([&]() noexcept {
        TypeCacheEntry* entry = lookup_type_cache(type, TYPECACHE_CMP_PROC);
        return OidIsValid(entry->cmp_proc);
    });
}

int compare_values(const TypedValue& a, const TypedValue& b)
{
    if (!type_is_ordered(a.type))
        throw UserError(sqlstate::kUndefinedFunction, "type " + type_display(a.type) + " has no default btree ordering",
                        {}, "Use a type that can be sorted (numbers, dates, timestamps, text, pg_lsn...).");
    return pg_call([&]() noexcept {
        TypeCacheEntry* entry = lookup_type_cache(a.type, TYPECACHE_CMP_PROC_FINFO);
        const Oid collation = OidIsValid(entry->typcollation) ? entry->typcollation : InvalidOid;
        return DatumGetInt32(FunctionCall2Coll(&entry->cmp_proc_finfo, collation, static_cast<Datum>(a.datum),
                                               static_cast<Datum>(b.datum)));
    });
}

std::string canonical_text(const TypedValue& value)
{
    const char* text = nullptr;
    with_canonical_settings([&] {
        text = pg_call([&]() noexcept {
            Oid output = InvalidOid;
            bool varlena = false;
            getTypeOutputInfo(value.type, &output, &varlena);
            return OidOutputFunctionCall(output, static_cast<Datum>(value.datum));
        });
    });
    return std::string(text);
}

TypedValue parse_canonical(const std::string& text, std::uint32_t type)
{
    Datum d = 0;
    with_canonical_settings([&] {
        d = pg_call([&]() noexcept {
            Oid input = InvalidOid;
            Oid ioparam = InvalidOid;
            getTypeInputInfo(type, &input, &ioparam);
            return OidInputFunctionCall(input, const_cast<char*>(text.c_str()), ioparam, -1);
        });
    });
    TypedValue v;
    v.datum = static_cast<std::uintptr_t>(d);
    v.type = type;
    v.is_null = false;
    return v;
}

std::string type_display(std::uint32_t type)
{
    return std::string(pg_call([&]() noexcept { return format_type_be(type); }));
}

std::string type_qualified(std::uint32_t type)
{
    return std::string(pg_call([&]() noexcept { return format_type_be_qualified(type); }));
}

TypeKind type_kind(std::uint32_t type)
{
    switch (type) {
    case INT4OID:
        return TypeKind::kInteger;
    case INT8OID:
        return TypeKind::kBigint;
    case NUMERICOID:
        return TypeKind::kNumeric;
    case DATEOID:
        return TypeKind::kDate;
    case TIMESTAMPOID:
        return TypeKind::kTimestamp;
    case TIMESTAMPTZOID:
        return TypeKind::kTimestamptz;
    case INTERVALOID:
        return TypeKind::kInterval;
    default:
        return TypeKind::kOther;
    }
}

std::uint32_t base_type(std::uint32_t type)
{
    return pg_call([&]() noexcept { return getBaseType(type); });
}

std::uint32_t trusted_state_type(std::uint32_t type)
{
    const Oid base = base_type(type);
    char kind = '\0';
    const Oid owner = pg_call([&]() noexcept {
        HeapTuple tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(base));
        if (!HeapTupleIsValid(tup))
            elog(ERROR, "cache lookup failed for type %u", base);
        const auto* form = reinterpret_cast<Form_pg_type>(GETSTRUCT(tup));
        kind = form->typtype;
        const Oid o = form->typowner;
        ReleaseSysCache(tup);
        return o;
    });
    // An anonymous record (or an array of them) has no input function: a
    // value stored as one could never be read back, by anyone.
    if (kind == TYPTYPE_PSEUDO)
        throw UserError(sqlstate::kDatatypeMismatch, "a value of type " + type_display(base) + " cannot be kept",
                        "It has no input function to read the stored text back.", "Cast it to a named type.");
    if (!pg_call([&]() noexcept { return superuser_arg(owner); })) {
        const char* name = pg_call([&]() noexcept { return GetUserNameFromId(owner, true); });
        const std::string role = name != nullptr ? name : std::to_string(owner);
        throw UserError(sqlstate::kInsufficientPrivilege,
                        "type " + type_display(base) + " is owned by role \"" + role + "\", which is not a superuser",
                        "Stored state is parsed and compared by its type's code in every session that reads it, "
                        "so only built-in types and types installed by a superuser can be kept.",
                        "Use a built-in type (bigint, numeric, date, timestamptz, text, pg_lsn) or a domain over one.");
    }
    return base;
}

}  // namespace pg_idempotent::pg
