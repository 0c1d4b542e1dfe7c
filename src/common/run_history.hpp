// The run history (idem.run_history): what each run of a bulk writing
// function did, written in the caller's transaction, so it commits or rolls
// back with the run it describes and "what did the 2:47am rerun do?" has an
// answer in SQL. claim and the other per-row functions do not record: their
// speed matters more than their story.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pg_idempotent {

namespace pg {
class SpiSession;
}

struct RunRecord {
    std::string function;             // "merge", "overwrite_partition", ...
    std::string target;               // schema.name of the table, view or job: text, so it outlives OIDs
    std::optional<std::string> unit;  // the unit of work: partition, predicate, version table, watermark
    std::string action;               // what it did: "merged", "unchanged", "skipped", "swapped", ...
    std::vector<std::pair<std::string, std::int64_t>> counts;  // as a jsonb object, in this order
    // The rows the run inserted, updated or deleted; nullopt when it did not
    // count them (swap_partition: the caller wrote the staging table).
    std::optional<std::int64_t> rows_written;
    bool changed = false;  // it changed the target (idem.history = changes records only these)
    // The values bound to the caller's SQL (pg::QueryParams::history_json),
    // "" for none.
    std::string params;
};

// Started when a run begins; records it when it ends.
class RunClock {
public:
    RunClock() : started_(std::chrono::steady_clock::now()) {}
    std::int64_t elapsed_microseconds() const;

private:
    std::chrono::steady_clock::time_point started_;
};

// Inserts the run into idem.run_log as the extension owner, unless idem.history
// says not to (off; changes and the run changed nothing) or the transaction is
// read-only (a hot standby included): bookkeeping must never make a no-op
// rerun fail where it could run.
void record_run(pg::SpiSession& spi, const RunClock& clock, const RunRecord& run);

// idem.purge_history: deletes the runs older than older_than (an interval's
// text) of the roles the caller is a member of (a superuser: every run).
std::int64_t purge_history(const std::string& older_than);

// The counts as a jsonb object's text: {"inserted": 3, "updated": 0}.
std::string counts_json(const std::vector<std::pair<std::string, std::int64_t>>& counts);

}  // namespace pg_idempotent
