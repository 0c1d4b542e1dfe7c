// idem.assert_rerun_safe (api.md section 5): run a job several times and
// prove that every run after the first leaves the tables as the first did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg/spi.hpp"

namespace pg_idempotent {

void assert_rerun_safe(const pg::ResultSet& out, const std::string& job, const std::vector<std::uint32_t>& tables,
                       std::int32_t runs, const std::vector<std::string>& exclude_columns, bool rollback);

}  // namespace pg_idempotent
