// A row type's columns as pg::Column (boundary-internal: catalog.cpp, which
// describes a query, and spi.cpp, which describes the statement it sends).
#pragma once

#include <vector>

#include "pg/catalog.hpp"
#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

// The columns of desc, numbered from 1, with their type names (plain and
// schema-qualified). Call outside pg_call: it makes its own calls.
std::vector<Column> columns_of(TupleDesc desc);

}  // namespace pg_idempotent::pg
