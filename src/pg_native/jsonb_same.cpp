#include "pg_native/jsonb_same.hpp"

#include <cstring>

extern "C" {
#include "utils/fmgrprotos.h"
}

namespace pg_idempotent::pg {
namespace {

// Neither compressed nor stored out of line: the bytes are the value's.
bool inline_and_plain(const varlena* v)
{
    return !VARATT_IS_EXTERNAL(v) && !VARATT_IS_COMPRESSED(v);
}

}  // namespace

Datum jsonb_same(FunctionCallInfo fcinfo)
{
    const Datum a = PG_GETARG_DATUM(0);
    const Datum b = PG_GETARG_DATUM(1);
    const auto* va = reinterpret_cast<const varlena*>(DatumGetPointer(a));
    const auto* vb = reinterpret_cast<const varlena*>(DatumGetPointer(b));
    if (inline_and_plain(va) && inline_and_plain(vb) && VARSIZE_ANY_EXHDR(va) == VARSIZE_ANY_EXHDR(vb) &&
        std::memcmp(VARDATA_ANY(va), VARDATA_ANY(vb), VARSIZE_ANY_EXHDR(va)) == 0)
        PG_RETURN_BOOL(true);
    return DirectFunctionCall2Coll(jsonb_eq, PG_GET_COLLATION(), a, b);
}

}  // namespace pg_idempotent::pg
