// A hold on a dataset (docs/publish.md, "Rollback that holds"): while it
// lasts, publish builds nothing and says so, so that the job scheduled
// after a rollback does not publish the rolled-back content again.
// idem.rollback(..., hold => true) or idem.hold sets it; idem.release ends
// it. Without a hold (the default), a rollback lasts until the next
// publish of different content.
#pragma once

#include <optional>
#include <string>

#include "pg/spi.hpp"
#include "publish/dataset.hpp"

namespace pg_idempotent {

struct DatasetHold {
    std::string since;  // held_at, as text
    std::string by;     // the role that set it
};

// The dataset's hold, if any (none while the SQL objects predate 0.9.0).
std::optional<DatasetHold> dataset_hold(pg::SpiSession& spi, const Dataset& d);

// Sets the hold on the dataset's row (which the caller has locked or is
// about to update); returns whether it was not held before.
bool set_hold(pg::SpiSession& spi, const Dataset& d);

// idem.hold(dataset), idem.release(dataset): whether the hold changed.
// 55000 for a dataset that has no published version.
bool hold(const std::string& dataset);
bool release(const std::string& dataset);

// idem.dataset_status(dataset): one row (current_version, next_version,
// flipped_at, held, held_at, held_by), none for an unknown dataset.
void dataset_status(const pg::ResultSet& out, const std::string& dataset);

}  // namespace pg_idempotent
