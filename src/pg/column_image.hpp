// One column's stored image fed to a row hasher (core/row_image.hpp): the
// one definition the checksum receiver, the digest aggregate and the row
// digest of an argument share. In the boundary because all three stand on
// it; inline because the receiver calls it for every column of every row.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/row_image.hpp"
#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

// Feeds one column's stored image to the hasher: NULL, or the bytes that
// datum_image_eq compares (detoasted, header-free for varlenas). Plain C-style
// code: may raise a PostgreSQL ERROR (detoasting), never a C++ exception.
// Returns true when it allocated (a detoasted copy, in CurrentMemoryContext),
// so a caller in a loop resets its context only when there is something to
// free. Inline: the digest receiver calls it for every column of every row.
pg_attribute_always_inline bool feed_column_image(core::RowHasher* hasher, Datum value, bool isnull, int16 typlen,
                                                  bool typbyval)
{
    if (isnull) {
        hasher->add_null();
        return false;
    }
    if (typbyval) {
        // The bytes a heap tuple would store (store_att_byval), as
        // datum_image_eq compares them: the value in native byte order.
        switch (typlen) {
        case 1: {
            const char v = DatumGetChar(value);
            hasher->add_fixed<1>(&v);
            return false;
        }
        case 2: {
            const int16 v = DatumGetInt16(value);
            hasher->add_fixed<2>(&v);
            return false;
        }
        case 4: {
            const int32 v = DatumGetInt32(value);
            hasher->add_fixed<4>(&v);
            return false;
        }
        case 8: {
            const Datum v = value;
            static_assert(sizeof v == 8);
            hasher->add_fixed<8>(&v);
            return false;
        }
        default:
            // As store_att_byval: no by-value type has another length.
            elog(ERROR, "unsupported byval length: %d", static_cast<int>(typlen));
        }
    }
    if (typlen > 0) {
        hasher->add_value(DatumGetPointer(value), static_cast<std::size_t>(typlen));
        return false;
    }
    if (typlen == -1) {
        // Compressed, external or expanded: the stored image is the plain
        // value; the 1- or 4-byte header is not part of it.
        struct varlena* v = reinterpret_cast<struct varlena*>(DatumGetPointer(value));
        bool copied = false;
        if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v)) {
            v = detoast_attr(v);  // short inline headers need no copy
            copied = true;
        }
        hasher->add_value(VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
        return copied;
    }
    const char* s = DatumGetCString(value);  // typlen -2: a cstring
    hasher->add_value(s, std::strlen(s));
    return false;
}

}  // namespace pg_idempotent::pg
