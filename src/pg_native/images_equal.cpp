#include "pg_native/images_equal.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
}

namespace pg_idempotent::pg {
namespace {

// The argument types' storage, looked up once per call site (fn_extra).
struct PairShapes {
    int nargs;
    int16 typlen[FUNC_MAX_ARGS];
    bool typbyval[FUNC_MAX_ARGS];
};

const PairShapes* pair_shapes(FunctionCallInfo fcinfo)
{
    auto* cached = static_cast<PairShapes*>(fcinfo->flinfo->fn_extra);
    if (cached != nullptr && cached->nargs == PG_NARGS())
        return cached;
    if (PG_NARGS() % 2 != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("idem._images_equal takes pairs of values, not %d arguments", PG_NARGS()),
                        errhint("Pass a1, b1, a2, b2, ... to compare (a1, a2, ...) with (b1, b2, ...).")));
    auto* shapes = static_cast<PairShapes*>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(PairShapes)));
    shapes->nargs = PG_NARGS();
    for (int i = 0; i < PG_NARGS(); i += 2) {
        const Oid a = get_fn_expr_argtype(fcinfo->flinfo, i);
        const Oid b = get_fn_expr_argtype(fcinfo->flinfo, i + 1);
        if (!OidIsValid(a) || a != b)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("idem._images_equal: arguments %d and %d are of different types (%s and %s)", i + 1,
                                   i + 2, format_type_be(a), format_type_be(b)),
                            errhint("Cast each value to the type of the one it is compared with.")));
        get_typlenbyval(a, &shapes->typlen[i], &shapes->typbyval[i]);
    }
    fcinfo->flinfo->fn_extra = shapes;
    return shapes;
}

}  // namespace

Datum images_equal(FunctionCallInfo fcinfo)
{
    const PairShapes* shapes = pair_shapes(fcinfo);
    for (int i = 0; i < shapes->nargs; i += 2) {
        const bool a_null = PG_ARGISNULL(i);
        const bool b_null = PG_ARGISNULL(i + 1);
        if (a_null || b_null) {
            if (a_null != b_null)
                PG_RETURN_BOOL(false);
            continue;
        }
        if (!datum_image_eq(PG_GETARG_DATUM(i), PG_GETARG_DATUM(i + 1), shapes->typbyval[i], shapes->typlen[i]))
            PG_RETURN_BOOL(false);
    }
    PG_RETURN_BOOL(true);
}

}  // namespace pg_idempotent::pg
