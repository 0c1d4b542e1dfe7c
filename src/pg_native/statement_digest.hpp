// The multiset digest of the rows a statement returns (docs/checksum.md),
// computed by the executor: through the row digest receiver
// (row_digest_receiver.hpp), or by the aggregate idem._digest_agg so that
// PostgreSQL may split the scan among parallel workers. Feature code written
// against the executor (pg_native/), over the generic pg::SpiSession.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "pg/spi.hpp"
#include "pg_native/digest_targets.hpp"

namespace pg_idempotent::pg {

// Streams the rows of one row-returning statement into a multiset digest
// (constant memory; nothing is copied into SPI's tuple table). Caller SQL is
// welcome here: it must be a single statement that returns rows.
core::MultisetDigest digest_statement_rows(SpiSession& spi, const std::string& sql, const Params& params = {});

// The same, into targets (targets.hasher and targets.digest must be set): a
// second digest of columns sent side by side, an early stop
// (digest_targets.hpp). columns: when given, set to the statement's result
// columns (SpiSession::send_rows).
void digest_statement_rows_into(SpiSession& spi, const std::string& sql, const DigestTargets& targets,
                                const Params& params = {}, std::vector<Column>* columns = nullptr);
// The same for a statement SpiSession::prepare_rows planned.
void digest_statement_rows_into(SpiSession& spi, PlannedRows plan, const DigestTargets& targets,
                                const Params& params = {}, std::vector<Column>* columns = nullptr);

// The digest text of the rows of a SELECT the extension built, with
// column_count columns: computed by the aggregate idem._digest_agg when
// aggregate_installed, so PostgreSQL may split the scan among parallel
// workers. The same text as digest_statement_rows(spi, sql).text(), which it
// falls back to for zero columns, and while the database's SQL objects
// predate the aggregate (common/installed_sql.hpp).
std::string digest_select_text(SpiSession& spi, const std::string& sql, std::size_t column_count,
                               bool aggregate_installed, const Params& params = {});

}  // namespace pg_idempotent::pg
