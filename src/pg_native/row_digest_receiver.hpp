// A DestReceiver that hashes each row it is sent (v1 image) into a
// MultisetDigest, so a checksum streams through the executor in constant
// memory instead of collecting rows in SPI's tuple table.
#pragma once

#include <cstdint>

#include "core/digest.hpp"
#include "core/row_image.hpp"
#include "pg/column_image.hpp"
#include "pg/postgres.hpp"
#include "pg_native/digest_targets.hpp"

namespace pg_idempotent::pg {

// Allocated with palloc in the current memory context (call under pg_call).
DestReceiver* make_row_digest_receiver(const DigestTargets& targets);

}  // namespace pg_idempotent::pg
