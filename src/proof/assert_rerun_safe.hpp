// idem.assert_rerun_safe (api.md section 5): run a job several times and
// prove that every run after the first leaves the tables as the first did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg/spi.hpp"

namespace pg_idempotent {

// allow_unchanged: run 1 may change none of the tables (otherwise ID007,
// nothing was proven); created_tables: tables named by name, which need
// not exist before run 1 (their state is then "absent").
void assert_rerun_safe(const pg::ResultSet& out, const std::string& job, const std::vector<std::uint32_t>& tables,
                       std::int32_t runs, const std::vector<std::string>& exclude_columns, bool rollback,
                       bool allow_unchanged, const std::vector<std::string>& created_tables);

}  // namespace pg_idempotent
