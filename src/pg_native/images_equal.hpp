// idem._images_equal(VARIADIC "any"): whether (a1, a2, ...) and (b1, b2,
// ...), passed as pairs a1, b1, a2, b2, ..., have the same stored images:
// what record_image_eq(ROW(a1, a2, ...), ROW(b1, b2, ...)) answers (NULL
// equals NULL, and datum_image_eq compares each pair, as record_image_eq
// does), without forming the two records. Merge, append and snapshot compare
// every source row with its target row; forming and deforming two records a
// row was most of that comparison's cost.
//
// C-style (no C++ object in the frame): a pair of different types, or an
// odd number of arguments, raises.
#pragma once

#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

Datum images_equal(FunctionCallInfo fcinfo);

}  // namespace pg_idempotent::pg
