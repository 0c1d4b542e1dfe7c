#include "pg_native/statement_digest.hpp"

#include <memory>

#include "core/row_image.hpp"
#include "core/sql_text.hpp"
#include "pg/guard.hpp"
#include "pg_native/row_digest_receiver.hpp"

namespace pg_idempotent::pg {

core::MultisetDigest digest_statement_rows(SpiSession& spi, const std::string& sql, const Params& params)
{
    auto hasher = std::make_unique<core::RowHasher>();
    core::MultisetDigest digest;
    DigestTargets targets;
    targets.hasher = hasher.get();
    targets.digest = &digest;
    digest_statement_rows_into(spi, sql, targets, params);
    return digest;
}

void digest_statement_rows_into(SpiSession& spi, const std::string& sql, const DigestTargets& targets,
                                const Params& params, std::vector<Column>* columns)
{
    digest_statement_rows_into(spi, spi.prepare_rows(sql, params), targets, params, columns);
}

void digest_statement_rows_into(SpiSession& spi, PlannedRows plan, const DigestTargets& targets, const Params& params,
                                std::vector<Column>* columns)
{
    // The receiver lives in the SPI procedure context, as the statement's
    // own allocations do, and goes with it at finish().
    spi.connect();
    DestReceiver* receiver = pg_call([&]() noexcept { return make_row_digest_receiver(targets); });
    spi.send_rows(plan, receiver, params, columns);
}

std::string digest_select_text(SpiSession& spi, const std::string& sql, std::size_t column_count,
                               bool aggregate_installed, const Params& params)
{
    if (column_count > 0 && column_count <= core::kMaxCallArguments && aggregate_installed) {
        auto r = spi.query(core::digest_aggregate_sql(sql, column_count), params);
        return r.rows.at(0).at(0).value_or("");
    }
    return digest_statement_rows(spi, sql, params).text();
}

}  // namespace pg_idempotent::pg
