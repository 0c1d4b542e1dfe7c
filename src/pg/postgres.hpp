// The one place PostgreSQL's C headers enter the C++ code.
//
// Only files under src/pg/ and src/pg_native/ and the entry shims
// (src/pg_idempotent.cpp) include this (test/unit/layout.sh checks).
// Everything else talks to PostgreSQL through the guarded C++ API of the
// other headers in this folder, which never expose a PostgreSQL type.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "tcop/dest.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"
#include "utils/uuid.h"
}

// PostgreSQL defines these as macros; they collide with the C++ library.
#ifdef Min
#undef Min
#endif
#ifdef Max
#undef Max
#endif
