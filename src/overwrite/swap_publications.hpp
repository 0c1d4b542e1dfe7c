// The old partition's own memberships in publications (ALTER PUBLICATION
// ... ADD TABLE the partition), carried to the staging table by a swap
// (docs/overwrite.md, "Carried over"). A membership through the parent
// needs nothing: the new partition inherits it.
#pragma once

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// Adds the staging table to each publication the old partition is an
// explicit member of, with the same column list and row filter. Only
// publications the caller may alter (it has the privileges of their owner)
// are carried; a swap refuses the others before any work (swap_losses.hpp).
void carry_publications(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging);

}  // namespace pg_idempotent
