// Which partition of a table holds a value of its one-column partition key,
// found as PostgreSQL's tuple routing finds it: a binary search in the
// parent's partition bounds (the relcache's partition descriptor). Nothing
// is read or locked per partition, so a table of 1,000 partitions costs what
// one of 10 does, and a job of one day never holds a lock on another day's
// partition (a reader or a writer of that day never waits on it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/values.hpp"

namespace pg_idempotent::pg {

struct PartitionForValue {
    std::optional<std::uint32_t> partition;  // the partition whose bound holds the value
    bool default_takes_it = false;           // only the DEFAULT partition would take it
};

// value: of the key column's type. The parent is locked ACCESS SHARE, as any
// query of it would be; detached (pending) partitions are left out.
PartitionForValue partition_for_value(std::uint32_t parent, const TypedValue& value);

// The name of the column a partitioned table is partitioned on, when its
// partition key is one plain column (not several, not an expression).
std::optional<std::string> partition_key_column(std::uint32_t parent);

}  // namespace pg_idempotent::pg
