// A DestReceiver that hashes each row it is sent (v1 image) into a
// MultisetDigest, so a checksum streams through the executor in constant
// memory instead of collecting rows in SPI's tuple table.
#pragma once

#include "core/digest.hpp"
#include "core/row_image.hpp"
#include "pg/postgres.hpp"

namespace pg_idempotent::pg {

// Allocated with palloc in the current memory context (call under pg_call).
// The hasher and digest are owned by the caller and outlive the receiver.
DestReceiver* make_row_digest_receiver(core::RowHasher* hasher, core::MultisetDigest* digest);

// Feeds one column's stored image to the hasher: NULL, or the bytes that
// datum_image_eq compares (detoasted, header-free for varlenas). Plain C-style
// code: may raise a PostgreSQL ERROR (detoasting), never a C++ exception.
void feed_column_image(core::RowHasher* hasher, Datum value, bool isnull, int16 typlen,
                       bool typbyval);

}  // namespace pg_idempotent::pg
