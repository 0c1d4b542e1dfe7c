// Whether a publish's query returns the current version's rows, learned as
// early as one row can tell (issue 45). Each version keeps a sample of its
// rows' hashes (core/row_sample.hpp); the query's rows are hashed against
// it, and the first row outside the sample, or one row more than the
// version holds, proves new content: the rest of the query is not read
// before building the new version, which reads it once more anyway. Only a
// query that may be the same content is read to its end, for its digest.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "pg/catalog.hpp"
#include "pg/spi.hpp"
#include "publish/dataset.hpp"

namespace pg_idempotent {

struct QueryCheck {
    core::MultisetDigest digest;      // of every row, unless differs
    bool differs = false;             // proven other content than version `against`
    std::optional<int> against;       // the current version whose sample was used
    std::vector<pg::Column> columns;  // the query's result columns
    // The query, parsed and planned once for the check and the build that
    // may follow (valid until the SPI session's finish()).
    pg::PlannedRows plan = nullptr;
};

// Hashes the query's rows (as the caller) against the current version's
// sample, when it keeps one; describes the query from the plan that runs
// (no second planning of it for its shape). plan: the query's, from an
// earlier check (nullptr: planned here).
QueryCheck check_against_current(pg::SpiSession& spi, const Dataset& d, const std::string& query,
                                 const pg::Params& params, pg::PlannedRows plan = nullptr);

}  // namespace pg_idempotent
