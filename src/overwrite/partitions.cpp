#include "overwrite/partitions.hpp"

#include "pg/errors.hpp"
#include "pg/settings.hpp"
#include "pg/unit_lock.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

const char* const kPartitionColumns =
    "SELECT c.oid::pg_catalog.text, i.inhparent::pg_catalog.text,"
    " pg_catalog.pg_get_expr(c.relpartbound, c.oid),"
    " pg_catalog.pg_get_partition_constraintdef(c.oid),"
    " (pt.partdefid OPERATOR(pg_catalog.=) c.oid)::pg_catalog.text,"
    " c.relkind::pg_catalog.text, c.relpersistence::pg_catalog.text, c.relowner::pg_catalog.text"
    " FROM pg_catalog.pg_class c"
    " JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) c.oid"
    " JOIN pg_catalog.pg_partitioned_table pt ON pt.partrelid OPERATOR(pg_catalog.=) i.inhparent"
    " WHERE c.relispartition AND ";

std::vector<Partition> read_partitions(pg::SpiSession& spi, const std::string& where, std::uint32_t oid)
{
    pg::QueryResult r;
    pg::with_canonical_settings(
        [&] { r = spi.query(std::string(kPartitionColumns) + where + " ORDER BY c.oid", {Param::of_oid(oid)}); });
    std::vector<Partition> out;
    for (const auto& row : r.rows) {
        Partition p;
        const auto oid_of = [](const std::optional<std::string>& s) {
            return static_cast<std::uint32_t>(std::stoul(s.value_or("0")));
        };
        p.rel = pg::describe_relation(oid_of(row[0]));
        p.parent = oid_of(row[1]);
        p.parent_qualified = pg::describe_relation(p.parent).qualified;
        p.bound = row[2].value_or("DEFAULT");
        p.constraint = row[3].value_or("true");
        p.is_default = row[4] == std::optional<std::string>("true");
        p.partitioned = row[5] == std::optional<std::string>("p");
        p.persistence = row[6].value_or("p").at(0);
        p.owner = oid_of(row[7]);
        out.push_back(std::move(p));
    }
    return out;
}

void lock_unit(pg::SpiSession& spi, pg::UnitLockSpace space, std::uint32_t key, pg::UnitLockMode mode,
               const std::optional<std::string>& lock_timeout, const std::string& what)
{
    with_lock_budget(spi, lock_timeout, what + " is being overwritten by another transaction",
                     [&] { pg::lock_unit(space, key, mode); });
}

}  // namespace

std::optional<Partition> describe_partition(pg::SpiSession& spi, std::uint32_t oid)
{
    auto found = read_partitions(spi, "c.oid OPERATOR(pg_catalog.=) $1", oid);
    if (found.empty())
        return std::nullopt;
    return std::move(found.front());
}

void with_lock_budget(pg::SpiSession& spi, const std::optional<std::string>& lock_timeout, const std::string& message,
                      const std::function<void()>& fn)
{
    if (!lock_timeout) {
        fn();
        return;
    }
    const std::string setting = pg::lock_timeout_setting(spi, *lock_timeout);
    try {
        pg::with_lock_timeout(setting, fn);
    } catch (pg::PgError& e) {
        if (pg::error_sqlstate(e) != sqlstate::kLockNotAvailable)
            throw;
        throw UserError(sqlstate::kLockNotAvailable, message, pg::error_message(e),
                        "lock_timeout (" + *lock_timeout + ") passed; nothing was changed.");
    }
}

void lock_table_unit(pg::SpiSession& spi, std::uint32_t table, const std::optional<std::string>& lock_timeout,
                     const std::string& what)
{
    lock_unit(spi, pg::UnitLockSpace::kTable, table, pg::UnitLockMode::kExclusive, lock_timeout, what);
}

void lock_partitioned_table_unit(pg::SpiSession& spi, std::uint32_t parent, bool exclusive,
                                 const std::optional<std::string>& lock_timeout, const std::string& what)
{
    lock_unit(spi, pg::UnitLockSpace::kPartitionedTable, parent,
              exclusive ? pg::UnitLockMode::kExclusive : pg::UnitLockMode::kShared, lock_timeout, what);
}

void lock_partition_unit(pg::SpiSession& spi, std::uint32_t partition, const std::optional<std::string>& lock_timeout,
                         const std::string& what)
{
    lock_unit(spi, pg::UnitLockSpace::kPartition, partition, pg::UnitLockMode::kExclusive, lock_timeout, what);
}

void lock_partition_creation(pg::SpiSession& spi, std::uint32_t parent, const std::optional<std::string>& lock_timeout,
                             const std::string& what)
{
    with_lock_budget(spi, lock_timeout, what + " is getting a new partition from another transaction", [&] {
        pg::lock_unit(pg::UnitLockSpace::kPartitionCreation, parent, pg::UnitLockMode::kExclusive);
    });
}

void throw_rows_outside(pg::SpiSession& spi, const Partition& part, const std::string& rows, const pg::Params& params,
                        const std::string& rows_are, const pg::PgError& cause)
{
    auto n = spi.query(
        "SELECT pg_catalog.count(*)::pg_catalog.text FROM (" + rows + ") AS k WHERE (" + part.constraint + ") IS FALSE",
        params);
    const std::string outside = n.rows.at(0).at(0).value_or("0");
    if (outside == "0")
        throw cause;
    throw rows_outside(part, outside, rows_are);
}

UserError rows_outside(const Partition& part, const std::string& count, const std::string& rows_are)
{
    return UserError(sqlstate::kCheckViolation,
                     count + " rows of " + rows_are + " fall outside partition \"" + part.rel.display + "\"",
                     "Its bound is: " + part.bound,
                     "Every row must belong to the partition it replaces; nothing was changed.");
}

}  // namespace pg_idempotent
