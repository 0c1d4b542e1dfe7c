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
// The record also keeps the digest of the query's rows as the query
// returned them, before they were cast to the columns' types, with the
// query's column types ("the query's preimage"). When every cast is
// immutable (conversion_is_immutable), equal query rows give equal stored
// rows, so a rerun whose query returns the same rows again skips without
// casting them: it hashes the query's rows as they come. The preimage is
// kept only when the rows stored are exactly the rows those casts give (the
// INSERT's RETURNING digest is the digest of the cast rows of the same pass
// over the query: no BEFORE trigger changed them, the query returned the
// same rows twice). With it goes a sample of the query's row hashes
// (core/row_sample.hpp), so that a rerun whose query rows changed stops
// reading the query at the first row that proves it.
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

// The query's rows before the casts: the query's column types ("type:typmod"
// each) and the digest of its rows as it returned them.
struct QueryPreimage {
    std::string shape;
    std::string digest;
    // core::RowSampleBuilder::hex() of the same rows ("" when none: a record
    // from 0.5.0), so a rerun can stop reading a query whose rows changed.
    std::string sample;
};

// What a valid record says of the unit.
struct WrittenUnit {
    std::string digest;                     // of the unit's rows
    std::optional<QueryPreimage> preimage;  // of the query rows that gave them, when known
};

// Whether records keep the sample of the query's rows (0.6.0 SQL objects:
// the column, and the aggregate idem._digest_sample_agg that computes it).
bool records_query_samples();

// The record of unit, when it proves the rows unchanged since
// overwrite_partition wrote them; nullopt when it cannot.
std::optional<WrittenUnit> witnessed_unit(pg::SpiSession& spi, const pg::Relation& unit, const std::string& shape);

// The stamp the rows of one INSERT carry: its RETURNING xmin, cmin.
struct RowStamp {
    std::uint32_t xmin = 0;
    std::uint32_t cmin = 0;
};

// Whether the caller may read the stamps of unit's rows (SELECT on the whole
// table; column privileges do not give xmin): then an INSERT into unit may
// return them (RETURNING ..., xmin, cmin) for record_written_unit, and a
// record can be kept.
bool may_read_stamps(pg::SpiSession& spi, const pg::Relation& unit);

// Records that unit's rows are exactly the rows just inserted into it, whose
// digest (from the INSERT's RETURNING) is digest, and (when given) that
// they are the casts of the query rows preimage describes. Call right after
// that INSERT, before anything else writes to unit in this transaction.
// stamp: the INSERT's, when it returned one (else the rows are read for it,
// which after a DELETE + INSERT in place may scan past every deleted row).
void record_written_unit(pg::SpiSession& spi, const pg::Relation& unit, const std::string& shape,
                         const std::string& digest, const std::optional<QueryPreimage>& preimage,
                         const std::optional<RowStamp>& stamp = std::nullopt);

}  // namespace pg_idempotent
