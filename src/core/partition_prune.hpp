// Keeping a statement to the partitions of its batch (issue 45). When a
// partitioned target's one partition key column is a key column of the
// batch (merge, append with a unique index) or the column within widens
// (append), the batch's values of it are read first and bound to the
// statement as constants, and each reference to the target adds a
// condition on them: the planner then leaves every other partition out,
// neither planned nor locked. A job of one day costs the same in a table of
// 1,000 daily partitions as in one of 10, and never waits on, nor holds up,
// another day's job.
//
// The statement checks its own batch against what was read first: a row
// outside (the source changed meanwhile: a volatile query, or rows a
// concurrent transaction committed) raises `sqlstate`, which the caller
// catches, rolling the attempt back, to run the statement again unpruned.
#pragma once

#include <string>

#include "core/assignment.hpp"

namespace pg_idempotent::core {

struct PartitionPrune {
    AssignmentTarget column;  // the partition key column, as the target has it
    std::string eq;           // values: the column's equality operator, schema-qualified
    // false: $first is an array of the batch's values. true: $first and
    // $(first + 1) bound the target's window (the batch's range widened by
    // within), $(first + 2) and $(first + 3) the batch's own range.
    bool window = false;
    int first = 0;
    std::string sqlstate;  // raised for a batch row outside what was read
};

// " AND <alias>.<column> ...": the condition on the target's rows.
std::string prune_condition(const PartitionPrune& prune, const std::string& alias);

// A boolean over a batch row (<alias>.<column>, cast as the target has it):
// true inside (or NULL: the NULL key checks explain it), else it raises
// prune.sqlstate.
std::string prune_row_check(const PartitionPrune& prune, const std::string& alias);

// One row: the canonical text of the array of the batch's distinct values
// of column (cast as the target has it), or no row for more than limit of
// them. The caller's parameters keep their numbers.
std::string partition_values_sql(const std::string& source_sql, const AssignmentTarget& column, int limit);

// One row: the canonical texts of the batch's lowest value less within (an
// interval, the parameter `within`), its highest plus within, its lowest and
// its highest; NULLs for an empty batch.
std::string partition_window_sql(const std::string& source_sql, const AssignmentTarget& column,
                                 const std::string& within);

}  // namespace pg_idempotent::core
