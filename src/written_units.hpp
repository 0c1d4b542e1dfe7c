// What overwrite_partition last wrote into each partition, so that a rerun
// can tell the partition is unchanged without hashing it again.
//
// After a rewrite or swap, the partition's rows are exactly the rows one
// INSERT stored, and that INSERT's RETURNING gave their digest. Those rows
// carry the same xmin (the inserting (sub)transaction) and cmin (the
// INSERT's command). PostgreSQL never changes a row in place: any UPDATE,
// DELETE + INSERT, COPY or rewrite makes row versions with another xmin or
// cmin, a DELETE lowers the count, and an aborted DELETE or UPDATE leaves its
// command id in the row's cmin field. So while every row the caller can see
// still has that (xmin, cmin), there are as many as were inserted, the
// columns are the same, and fewer than 2^31 transactions have passed (no
// xid can have been reused), the recorded digest is the partition's digest.
// Checking that reads only the rows' headers (a count over system columns),
// not their values. Any doubt (a mismatch, another shape, no privilege, no
// record) falls back to hashing the partition.
//
// The record is a cache in idem.written_units, keyed by the partition's OID,
// written in the caller's transaction as the extension owner. It is not
// dumped: after a restore the rows have other xmins, and the fallback runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/catalog.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// The columns a digest of unit reads (the parent's writable columns, by
// name), as unit stores them: "attnum:type:typmod" each, so an added,
// dropped or retyped column (even without a table rewrite) is another shape.
std::string unit_shape(const pg::Relation& parent, const pg::Relation& unit);

// The digest text of unit's rows, when its record proves them unchanged
// since overwrite_partition wrote them; nullopt when it cannot.
std::optional<std::string> witnessed_digest(pg::SpiSession& spi, const pg::Relation& unit, const std::string& shape);

// Records that unit's rows are exactly the rows just inserted into it, whose
// digest (from the INSERT's RETURNING) is digest. Call right after that
// INSERT, before anything else writes to unit in this transaction.
void record_written_unit(pg::SpiSession& spi, const pg::Relation& unit, const std::string& shape,
                         const std::string& digest);

}  // namespace pg_idempotent
