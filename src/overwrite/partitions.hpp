// Partitions as overwrite_partition and swap_partition see them, and the lock
// that serializes overwrites of one unit of work.
//
// Bounds and partition constraints are deparsed by PostgreSQL under the
// canonical settings (ISO dates, UTC, postgres intervals, shortest exact
// floats), so the SQL text built from them means the same bound whatever the
// caller's TimeZone, DateStyle or extra_float_digits: ISO literals with an
// explicit offset read back identically under every setting.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

struct Partition {
    pg::Relation rel;
    std::uint32_t parent = 0;
    std::string parent_qualified;  // quoted "schema"."name"
    std::string bound;             // "FOR VALUES ..." or "DEFAULT"
    std::string constraint;        // a boolean expression over its columns ("true" if none)
    bool is_default = false;
    bool partitioned = false;  // itself partitioned (sub-partitioning)
    char persistence = 'p';    // relpersistence
    std::uint32_t owner = 0;
};

// The partition, or nullopt when the relation is not a partition.
std::optional<Partition> describe_partition(pg::SpiSession& spi, std::uint32_t oid);

// The locks that serialize overwrites (pg/unit_lock.hpp: no role but the
// extension can take them). Each waits at most lock_timeout (NULL: the
// session's setting); 55P03 "<what> is being overwritten by another
// transaction" when it passes. Released at commit.
//
// Every overwrite takes them first, before it reads or locks any relation,
// in one order: the partitioned table's, then the partition's; then the
// relations (parent, partition, staging; the parent alone may be locked
// ACCESS SHARE before the partition's, to find the partition). A swap that
// detaches, which ends by taking the parent's ACCESS EXCLUSIVE lock, holds
// the partitioned table's exclusively, so no other overwrite of that table
// holds a lock on it meanwhile that the swap would wait for while it waits
// for the swap; rewrites and swaps of the partition's storage share it (a
// storage swap's ACCESS EXCLUSIVE lock on the partition is waited for only
// by holders of no unit lock of that partition).
void lock_table_unit(pg::SpiSession& spi, std::uint32_t table, const std::optional<std::string>& lock_timeout,
                     const std::string& what);
void lock_partitioned_table_unit(pg::SpiSession& spi, std::uint32_t parent, bool exclusive,
                                 const std::optional<std::string>& lock_timeout, const std::string& what);
// The partition's lock is keyed by its OID, a key no other table has: a swap
// that detaches, which gives the partition a new OID, holds the partitioned
// table's lock alone, so no rewrite holds or waits for a partition lock
// meanwhile, and a rewrite that waited for the swap finds the new partition
// before it locks.
void lock_partition_unit(pg::SpiSession& spi, std::uint32_t partition, const std::optional<std::string>& lock_timeout,
                         const std::string& what);
// Creators of a parent's partitions take turns (create_partition): each
// looks again for the partition once it holds this lock. Taken only when a
// partition is missing, after the partitioned table's lock, before the
// parent is locked for the creation.
void lock_partition_creation(pg::SpiSession& spi, std::uint32_t parent, const std::optional<std::string>& lock_timeout,
                             const std::string& what);

// Runs fn with every lock wait bounded by lock_timeout (when given); a wait
// that times out becomes 55P03 with this message, the server's own message
// as DETAIL and HINT "nothing was changed".
void with_lock_budget(pg::SpiSession& spi, const std::optional<std::string>& lock_timeout, const std::string& message,
                      const std::function<void()>& fn);

// A row outside the partition's bound makes PostgreSQL's own check fail
// (23514, naming one row, `cause`); the caller gets how many of `rows` (a
// SELECT, described as `rows_are`: "the query", "staging table ...") fall
// outside, with the bound. When none does, the failure was another check's,
// and `cause` is raised as it was.
[[noreturn]] void throw_rows_outside(pg::SpiSession& spi, const Partition& part, const std::string& rows,
                                     const pg::Params& params, const std::string& rows_are, const pg::PgError& cause);

// The error for `count` rows (of `rows_are`) outside the partition's bound.
pg::UserError rows_outside(const Partition& part, const std::string& count, const std::string& rows_are);

}  // namespace pg_idempotent
