// idem.checksum, idem.checksum_query and idem.diff (api.md section 5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg/query_params.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

std::string checksum_relation(std::uint32_t relation, const std::vector<std::string>& exclude_columns);
// params: the values of the query's $1, $2, ...
std::string checksum_query(const std::string& query, const pg::QueryParams& params);
void diff_relations(const pg::ResultSet& out, std::uint32_t a, std::uint32_t b,
                    const std::vector<std::string>& exclude_columns, std::int32_t max_rows);

}  // namespace pg_idempotent
