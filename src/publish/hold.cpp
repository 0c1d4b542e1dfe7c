#include "publish/hold.hpp"

#include "common/installed_sql.hpp"
#include "common/scope_grants.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

constexpr const char* kWhere = " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2";

UserError never_published(const Dataset& d)
{
    return UserError(sqlstate::kObjectNotInPrerequisiteState, "dataset \"" + d.display + "\" has no published version",
                     "A hold keeps the version readers see; there is none yet.",
                     "Publish a version first with idem.publish.");
}

// Runs an UPDATE of the dataset's row (as the extension owner, which owns
// idem.datasets) that returns a row when it changed something; when it did
// not, 55000 unless the dataset has a current version.
bool update_hold(pg::SpiSession& spi, const Dataset& d, const std::string& update, bool require_published)
{
    bool changed = false;
    bool published = false;
    const std::string who = pg::current_user_name();  // before the switch to the owner
    pg::as_extension_owner([&] {
        changed = !spi.query_saved(update, {Param::of_text(d.schema), Param::of_text(d.name), Param::of_text(who)})
                       .rows.empty();
        if (!changed)
            published =
                !spi.query_saved(std::string("SELECT FROM idem.datasets") + kWhere + " AND current_version IS NOT NULL",
                                 {Param::of_text(d.schema), Param::of_text(d.name)})
                     .rows.empty();
    });
    if (!changed && require_published && !published)
        throw never_published(d);
    return changed;
}

Dataset resolve_for_hold(pg::SpiSession& spi, const std::string& dataset, const char* what)
{
    require_sql(SqlFeature::kDatasetHolds, what);
    const Dataset d = resolve(spi, dataset);
    check_scope_usage(spi, ScopeKind::kDataset, d.qualified, d.display);
    return d;
}

}  // namespace

std::optional<DatasetHold> dataset_hold(pg::SpiSession& spi, const Dataset& d)
{
    if (!sql_has(SqlFeature::kDatasetHolds))
        return std::nullopt;
    pg::QueryResult r;
    pg::as_extension_owner([&] {
        r = spi.query_saved(std::string("SELECT held_at::pg_catalog.text, held_by FROM idem.datasets") + kWhere +
                                " AND held_at IS NOT NULL",
                            {Param::of_text(d.schema), Param::of_text(d.name)});
    });
    if (r.rows.empty())
        return std::nullopt;
    return DatasetHold{r.rows[0][0].value_or(""), r.rows[0][1].value_or("")};
}

bool set_hold(pg::SpiSession& spi, const Dataset& d)
{
    return update_hold(spi, d,
                       std::string("UPDATE idem.datasets SET held_at = pg_catalog.now(), held_by = $3") + kWhere +
                           " AND current_version IS NOT NULL AND held_at IS NULL RETURNING true",
                       true);
}

bool hold(const std::string& dataset)
{
    pg::SpiSession spi;
    const Dataset d = resolve_for_hold(spi, dataset, "idem.hold");
    const bool changed = set_hold(spi, d);
    spi.finish();
    return changed;
}

bool release(const std::string& dataset)
{
    pg::SpiSession spi;
    const Dataset d = resolve_for_hold(spi, dataset, "idem.release");
    const bool changed = update_hold(spi, d,
                                     std::string("UPDATE idem.datasets SET held_at = NULL, held_by = NULL") + kWhere +
                                         " AND held_at IS NOT NULL AND $3 IS NOT NULL RETURNING true",
                                     false);
    spi.finish();
    return changed;
}

void dataset_status(const pg::ResultSet& out, const std::string& dataset)
{
    pg::SpiSession spi;
    const Dataset d = resolve_for_hold(spi, dataset, "idem.dataset_status");
    pg::as_extension_owner([&] {
        spi.return_rows(out,
                        std::string("SELECT current_version, next_version, flipped_at, held_at IS NOT NULL, held_at,"
                                    " held_by FROM idem.datasets") +
                            kWhere,
                        {Param::of_text(d.schema), Param::of_text(d.name)}, true);
    });
    spi.finish();
}

}  // namespace pg_idempotent
