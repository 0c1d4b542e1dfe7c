// What a digest of streamed rows computes besides the digest itself: a
// second digest of columns sent side by side, and an early stop at the first
// row a sample excludes. Filled
// by callers of pg::digest_statement_rows_into (statement_digest.hpp); the
// digest receiver (pg_native/row_digest_receiver.hpp) acts on it. No PostgreSQL header.
#pragma once

#include <cstdint>

#include "core/digest.hpp"
#include "core/row_image.hpp"
#include "core/row_sample.hpp"

namespace pg_idempotent::pg {

// What a digest receiver does with the rows it is sent. Everything pointed
// to is owned by the caller and outlives the receiver.
struct DigestTargets {
    core::RowHasher* hasher = nullptr;
    core::MultisetDigest* digest = nullptr;  // of the columns before split (all of them when split is 0)
    // split > 0: the columns from split on are a second row, hashed into
    // second (a query's rows and their casts, sent side by side).
    int split = 0;
    core::MultisetDigest* second = nullptr;
    // tail > 0: the last tail columns are not hashed; they must be 4-byte
    // by-value columns (xid, cid: an INSERT's RETURNING xmin, cmin), and the
    // first row's values of them are copied to first_row_tail[0..tail).
    int tail = 0;
    std::uint32_t* first_row_tail = nullptr;
    bool* got_first_row = nullptr;
    // Stop the query, setting *stopped, at the first row that proves the
    // rows are not the sampled multiset (excluded by check, or one more than
    // max_rows): what was hashed until then is not a digest of the rows.
    const core::RowSample* check = nullptr;
    std::uint64_t max_rows = UINT64_MAX;
    bool* stopped = nullptr;
    // The sample of the rows' hashes (of the columns before split), for a
    // later pass to stop early (nullptr: none).
    core::RowSampleBuilder* sample = nullptr;
    // A table (OID; 0: none) that every row is also stored into, as CREATE
    // TABLE AS stores them (bulk insert): a table built and checksummed in
    // one pass over the statement. It must have the statement's columns,
    // no index, trigger or constraint (made by CREATE TABLE ... AS ... WITH
    // NO DATA), and be locked by the caller.
    std::uint32_t store_into = 0;
};

}  // namespace pg_idempotent::pg
