// What Citus makes of a table, when Citus is installed (issue 25,
// docs/scaling.md). Read from Citus's catalog (pg_catalog.pg_dist_partition)
// through SPI, as the caller; without Citus every table is kNone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg/spi.hpp"

namespace pg_idempotent {

enum class CitusKind {
    kNone,         // a plain table (or no Citus)
    kDistributed,  // hash-distributed: rows on the workers' shards
    kReference,    // a copy on every node
    kLocal,        // a Citus local table: on the coordinator, in Citus's metadata
};

struct CitusTable {
    CitusKind kind = CitusKind::kNone;
    std::string distribution_column;  // kDistributed: the column rows are placed by
};

// Whether Citus is installed in this database.
bool citus_installed();

CitusTable citus_table(pg::SpiSession& spi, std::uint32_t relid);

// A write of function (idem.merge, idem.append) into a Citus table: 0A000
// when a distributed target's key lacks its distribution column (Citus
// places rows by it, and allows a unique index only with it: a key without
// it could be on any shard), or when this node is not the coordinator (a
// write's lock is the node's own) and the write is not a dry run.
void check_citus_write(pg::SpiSession& spi, const CitusTable& citus, const std::string& target,
                       const std::vector<std::string>& key, const std::string& function, bool dry_run);

// Whether this node may run a write that takes the extension's own unit
// locks: the coordinator, where every such lock of a Citus cluster is taken
// (a worker's locks are its own). True without Citus.
bool on_citus_coordinator(pg::SpiSession& spi);

}  // namespace pg_idempotent
