#include "publish/version_check.hpp"

#include <memory>

#include "common/installed_sql.hpp"
#include "core/row_sample.hpp"
#include "pg/roles.hpp"
#include "pg_native/statement_digest.hpp"

namespace pg_idempotent {

namespace {

struct CurrentSample {
    int version = 0;
    std::uint64_t rows = 0;
    core::RowSample sample;
};

// The current version's sample and row count, read as the extension owner;
// nullopt when it keeps none (a version of 0.8.0, or SQL objects before
// 0.9.0).
std::optional<CurrentSample> current_sample(pg::SpiSession& spi, const Dataset& d)
{
    if (!sql_has(SqlFeature::kVersionSamples))
        return std::nullopt;
    pg::QueryResult r;
    pg::as_extension_owner([&] {
        r = spi.query_saved(
            "SELECT v.version::pg_catalog.text, v.row_count::pg_catalog.text, pg_catalog.encode(v.row_sample, 'hex')"
            " FROM idem.datasets d JOIN idem.dataset_versions v"
            " ON v.schema_name OPERATOR(pg_catalog.=) d.schema_name"
            " AND v.view_name OPERATOR(pg_catalog.=) d.view_name"
            " AND v.version OPERATOR(pg_catalog.=) d.current_version"
            " WHERE d.schema_name OPERATOR(pg_catalog.=) $1 AND d.view_name OPERATOR(pg_catalog.=) $2"
            " AND v.row_sample IS NOT NULL",
            {pg::Param::of_text(d.schema), pg::Param::of_text(d.name)});
    });
    if (r.rows.empty() || !r.rows[0][0] || !r.rows[0][1] || !r.rows[0][2])
        return std::nullopt;
    std::optional<core::RowSample> sample = core::RowSample::parse(*r.rows[0][2], core::kRerunCheckModulus);
    if (!sample)
        return std::nullopt;  // not one publish wrote: read the query to its end
    return CurrentSample{std::stoi(*r.rows[0][0]), std::stoull(*r.rows[0][1]), std::move(*sample)};
}

}  // namespace

QueryCheck check_against_current(pg::SpiSession& spi, const Dataset& d, const std::string& query,
                                 const pg::Params& params, pg::PlannedRows plan)
{
    QueryCheck out;
    out.plan = plan != nullptr ? plan : spi.prepare_rows(query, params);
    const std::optional<CurrentSample> current = current_sample(spi, d);
    const auto hasher = std::make_unique<core::RowHasher>();
    pg::DigestTargets targets;
    targets.hasher = hasher.get();
    targets.digest = &out.digest;
    if (current) {
        targets.check = &current->sample;
        targets.max_rows = current->rows;
        targets.stopped = &out.differs;
        out.against = current->version;
    }
    pg::digest_statement_rows_into(spi, out.plan, targets, params, &out.columns);
    return out;
}

}  // namespace pg_idempotent
