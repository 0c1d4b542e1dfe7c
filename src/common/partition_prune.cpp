#include "common/partition_prune.hpp"

#include "pg/partition_lookup.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

std::optional<pg::Column> single_partition_column(const pg::Relation& target)
{
    if (target.kind != 'p')
        return std::nullopt;
    const std::optional<std::string> name = pg::partition_key_column(target.oid);
    if (!name)
        return std::nullopt;
    for (const auto& c : target.columns)
        if (c.name == *name)
            return c;
    return std::nullopt;
}

std::optional<pg::Param> read_batch_values(pg::SpiSession& spi, const std::string& source_sql,
                                           const core::PartitionPrune& prune, std::uint32_t type,
                                           const pg::QueryParams& caller)
{
    constexpr int kMostValues = 1000;
    const std::uint32_t array = pg::array_type(type);
    if (array == 0)
        return std::nullopt;
    const pg::QueryResult r =
        spi.query(core::partition_values_sql(source_sql, prune.column, kMostValues), caller.values, true);
    if (r.rows.empty() || !r.rows[0][0])
        return std::nullopt;
    return pg::Param::of_value(pg::parse_canonical(*r.rows[0][0], array));
}

std::optional<pg::Params> read_batch_window(pg::SpiSession& spi, const std::string& source_sql,
                                            const core::PartitionPrune& prune, std::uint32_t type,
                                            const pg::QueryParams& caller, const std::string& within)
{
    pg::Params params = caller.values;
    params.push_back(pg::Param::of_text(within));
    const std::string within_param = "$" + std::to_string(params.size());
    const pg::QueryResult r =
        spi.query(core::partition_window_sql(source_sql, prune.column, within_param), params, true);
    pg::Params out;
    for (const auto& v : r.rows.at(0)) {
        if (!v)
            return std::nullopt;
        out.push_back(pg::Param::of_value(pg::parse_canonical(*v, type)));
    }
    return out;
}

}  // namespace pg_idempotent
