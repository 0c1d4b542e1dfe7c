// PG_MODULE_MAGIC and the extern "C" entry shims: each reads its arguments
// into plain C++ values and calls the feature through cpp_entry, the one
// guard between PostgreSQL's longjmp errors and C++ exceptions.
#include "boundary_probe.hpp"
#include "checksum.hpp"
#include "pg/args.hpp"
#include "pg/guard.hpp"

namespace pg = pg_idempotent::pg;

// PGDLLEXPORT is empty on Linux: keep the entry points visible even when the
// module is built with -fvisibility=hidden.
#pragma GCC visibility push(default)
extern "C" {

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(idem_checksum);
PG_FUNCTION_INFO_V1(idem_checksum_query);
PG_FUNCTION_INFO_V1(idem_diff);
PG_FUNCTION_INFO_V1(idem__row_digest);
PG_FUNCTION_INFO_V1(idem__boundary_probe);

Datum idem_checksum(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "rel");
        pg::require_arg(fcinfo, 1, "exclude_columns");
        const auto rel = *pg::arg_oid(fcinfo, 0);
        const auto exclude = *pg::arg_text_array(fcinfo, 1, "exclude_columns");
        return pg::text_result(pg_idempotent::checksum_relation(rel, exclude));
    });
}

Datum idem_checksum_query(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "query");
        return pg::text_result(pg_idempotent::checksum_query(*pg::arg_text(fcinfo, 0)));
    });
}

Datum idem_diff(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "a");
        pg::require_arg(fcinfo, 1, "b");
        pg::require_arg(fcinfo, 2, "exclude_columns");
        pg::require_arg(fcinfo, 3, "max_rows");
        pg_idempotent::diff_relations(fcinfo, *pg::arg_oid(fcinfo, 0), *pg::arg_oid(fcinfo, 1),
                                      *pg::arg_text_array(fcinfo, 2, "exclude_columns"),
                                      *pg::arg_int4(fcinfo, 3));
        return Datum(0);
    });
}

Datum idem__row_digest(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "row");
        return pg::uuid_result(pg::arg_record_digest(fcinfo, 0));
    });
}

Datum idem__boundary_probe(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "action");
        const auto n = pg_idempotent::boundary_probe(*pg::arg_text(fcinfo, 0), pg::arg_text(fcinfo, 1));
        return Int64GetDatum(n);
    });
}

}  // extern "C"
#pragma GCC visibility pop
