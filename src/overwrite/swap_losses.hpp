// What a swap cannot carry from the old partition to the new table, found
// before any work: refused with 0A000 naming it, unless the caller accepts
// the loss (accept_losses => true; docs/overwrite.md, "Not carried over").
#pragma once

#include <string>
#include <vector>

#include "overwrite/partitions.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

// One line per loss, e.g. "membership in publication \"sales_pub\"".
std::vector<std::string> swap_losses(pg::SpiSession& spi, const Partition& part);

// UserError 0A000 listing the losses, unless there are none or accepted.
void refuse_swap_losses(pg::SpiSession& spi, const Partition& part, bool accept_losses);

}  // namespace pg_idempotent
