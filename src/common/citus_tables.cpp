#include "common/citus_tables.hpp"

#include <algorithm>

#include "pg/catalog.hpp"
#include "pg/errors.hpp"

namespace pg_idempotent {

bool citus_installed()
{
    return pg::relation_exists("pg_catalog", "pg_dist_partition");
}

CitusTable citus_table(pg::SpiSession& spi, std::uint32_t relid)
{
    CitusTable t;
    if (!citus_installed())
        return t;
    const pg::QueryResult r = spi.query(
        "SELECT p.partmethod::pg_catalog.text, p.repmodel::pg_catalog.text, "
        "CASE WHEN p.partmethod OPERATOR(pg_catalog.=) 'h' THEN pg_catalog.column_to_column_name(p.logicalrelid, "
        "p.partkey) END FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1",
        {pg::Param::of_oid(relid)}, true);
    if (r.rows.empty())
        return t;
    const std::string method = r.rows[0][0].value_or("");
    if (method == "h") {
        t.kind = CitusKind::kDistributed;
        t.distribution_column = r.rows[0][2].value_or("");
    } else {
        t.kind = r.rows[0][1].value_or("") == "t" ? CitusKind::kReference : CitusKind::kLocal;
    }
    return t;
}

bool on_citus_coordinator(pg::SpiSession& spi)
{
    if (!citus_installed())
        return true;
    return spi.query("SELECT pg_catalog.citus_is_coordinator()", {}, true).rows.at(0).at(0) == "t";
}

void check_citus_write(pg::SpiSession& spi, const CitusTable& citus, const std::string& target,
                       const std::vector<std::string>& key, const std::string& function, bool dry_run)
{
    using pg::UserError;
    namespace sqlstate = pg::sqlstate;
    if (citus.kind == CitusKind::kDistributed &&
        std::find(key.begin(), key.end(), citus.distribution_column) == key.end())
        throw UserError(sqlstate::kFeatureNotSupported,
                        "the key of " + function + " into distributed table \"" + target +
                            "\" must hold its distribution column \"" + citus.distribution_column + "\"",
                        "Citus places each row by its distribution column; a key without it could be on any shard.",
                        "Pass key => ARRAY[...] with \"" + citus.distribution_column +
                            "\" and the other key columns, with a unique index on them.");
    if (citus.kind != CitusKind::kNone && !dry_run && !on_citus_coordinator(spi))
        throw UserError(sqlstate::kFeatureNotSupported,
                        function + " into Citus table \"" + target + "\" runs on the coordinator",
                        "Writes of one target take turns through a lock on the node that runs them; a worker's "
                        "locks are its own.",
                        "Connect to the coordinator to write.");
}

}  // namespace pg_idempotent
