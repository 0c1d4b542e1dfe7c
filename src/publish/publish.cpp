#include "publish/publish.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "common/citus_tables.hpp"
#include "common/installed_sql.hpp"
#include "common/run_history.hpp"
#include "common/scope_grants.hpp"
#include "core/row_sample.hpp"
#include "core/sql_text.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/step.hpp"
#include "pg/transactions.hpp"
#include "pg_native/statement_digest.hpp"
#include "publish/dataset.hpp"
#include "publish/hold.hpp"
#include "publish/version_check.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// Whether idem.datasets records the view and the owner (without it, publish
// works as 0.6.0 did).
bool has_registry()
{
    return sql_has(SqlFeature::kDatasetRegistry);
}

// "<name>__v<n>", within the 63-byte identifier limit.
std::string version_table_name(const std::string& name, int version)
{
    return core::identifier_with_suffix(name, "__v" + std::to_string(version));
}

// The name of a new version table: "<name>__v<n>" unless a relation of that
// name is already in the schema (a role with CREATE there took it first, or
// another dataset's long name was cut to the same one), then
// "<name>__v<n>_<8 random hex digits>", which no one can take in advance.
// The versions are found by OID (idem.dataset_versions), never by name, so
// any free name will do.
std::string free_version_table_name(const Dataset& d, int version)
{
    const std::string suffix = "__v" + std::to_string(version);
    std::string name = core::identifier_with_suffix(d.name, suffix);
    if (pg::relation_oid(d.schema, name) == 0)
        return name;
    // Made only when the name is taken: opening the random device costs
    // about 20 us, which every publish paid.
    std::random_device random;
    for (int attempt = 0; attempt < 8; ++attempt) {
        char tag[10];
        std::snprintf(tag, sizeof tag, "_%08x", static_cast<unsigned>(random()));
        name = core::identifier_with_suffix(d.name, suffix + tag);
        if (pg::relation_oid(d.schema, name) == 0)
            return name;
    }
    throw UserError(sqlstate::kDuplicateTable,
                    "no free name for version " + std::to_string(version) + " of dataset \"" + d.display + "\"",
                    "Relation " + name + " exists in schema \"" + d.schema + "\".", "Publish again.");
}

struct State {
    std::optional<int> current;
    int next = 1;
    std::optional<std::uint32_t> view;   // the view publish made (or adopt took), when known
    std::optional<std::uint32_t> owner;  // the registered owner: every version table is its
};

// The dataset's row, created if missing and locked for the rest of the
// transaction: concurrent publishers of one dataset queue here. A dataset
// published before has its row: one statement (the INSERT only when the
// SELECT found none).
State lock_state(pg::SpiSession& spi, const Dataset& d)
{
    State s;
    pg::as_extension_owner([&] {
        const pg::Params key = {Param::of_text(d.schema), Param::of_text(d.name)};
        const std::string select =
            std::string("SELECT current_version::pg_catalog.text, next_version::pg_catalog.text,") +
            (has_registry() ? " view_relid::pg_catalog.oid::pg_catalog.text, owner::pg_catalog.oid::pg_catalog.text"
                            : " NULL, NULL") +
            " FROM idem.datasets WHERE schema_name OPERATOR(pg_catalog.=) $1"
            " AND view_name OPERATOR(pg_catalog.=) $2 FOR UPDATE";
        auto r = spi.query_saved(select, key);
        if (r.rows.empty()) {
            spi.query_saved(
                "INSERT INTO idem.datasets (schema_name, view_name) VALUES ($1, $2)"
                " ON CONFLICT (schema_name, view_name) DO NOTHING",
                key);
            r = spi.query_saved(select, key);
        }
        const auto& row = r.rows.at(0);
        if (row[0])
            s.current = std::stoi(*row[0]);
        s.next = std::stoi(row[1].value_or("1"));
        if (row[2])
            s.view = static_cast<std::uint32_t>(std::stoul(*row[2]));
        if (row[3])
            s.owner = static_cast<std::uint32_t>(std::stoul(*row[3]));
    });
    return s;
}

struct Version {
    int number;
    std::uint32_t relation;
    std::string checksum;
    bool pinned;
    std::int64_t row_count;
};

std::vector<Version> load_versions(pg::SpiSession& spi, const Dataset& d)
{
    std::vector<Version> out;
    pg::as_extension_owner([&] {
        auto r = spi.query_saved(
            "SELECT version::pg_catalog.text, relation::pg_catalog.oid::pg_catalog.text, checksum,"
            " pinned::pg_catalog.text, row_count::pg_catalog.text FROM idem.dataset_versions"
            " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2"
            " ORDER BY version",
            {Param::of_text(d.schema), Param::of_text(d.name)});
        for (const auto& row : r.rows)
            out.push_back(Version{std::stoi(row[0].value_or("0")),
                                  static_cast<std::uint32_t>(std::stoul(row[1].value_or("0"))), row[2].value_or(""),
                                  row[3] == std::optional<std::string>("true"), std::stoll(row[4].value_or("0"))});
    });
    return out;
}

// The relation that holds the dataset's name now, if any (the catalog as
// committed: a view another role created meanwhile is seen).
std::optional<pg::RelationHead> existing_view(const Dataset& d)
{
    return pg::relation_head(d.schema, d.name);
}

// A view that holds the dataset's name but that neither publish made nor a
// DBA adopted may belong to anyone with CREATE on the schema: publishing into
// it would hand the version table, and what readers see, to that role.
// Returns the view's OID when there is one (the dataset's), nullopt when
// publish is to create it.
std::optional<std::uint32_t> require_own_view(const Dataset& d, const State& state)
{
    const auto view = existing_view(d);
    if (!view)
        return std::nullopt;  // publish creates it
    if (view->kind != 'v')
        throw UserError(sqlstate::kWrongObjectType, "\"" + d.display + "\" exists and is not a view",
                        "A dataset is the view readers query; publish creates and replaces it.",
                        "Publish under another name, or rename the existing object.");
    if (!has_registry())
        return view->oid;  // 0.6.0's SQL objects: nothing recorded to compare with
    if (state.view && *state.view == view->oid)
        return view->oid;
    throw UserError(sqlstate::kDuplicateTable, "view \"" + d.display + "\" exists and was not created by idem.publish",
                    "Publishing into it would make role \"" + pg::role_name(view->owner) +
                        "\", its owner, the owner of what its readers see.",
                    "Drop the view, or let its owner adopt it as a dataset: SELECT idem.adopt(" +
                        pg::quote_literal(d.qualified) + ").");
}

// Points the view at a version table: the only change readers ever see.
// CREATE OR REPLACE VIEW keeps the view's OID, grants, comments and the
// views that depend on it; it takes the view's ACCESS EXCLUSIVE lock.
// The view must still be the dataset's after the flip: CREATE OR REPLACE
// replaces a view that another role created meanwhile (after require_own_view
// looked, while the version was built) and leaves that role its owner, who
// would then define what readers see. Checked in the flip's transaction, so
// the whole publish rolls back.
void require_view_kept(const Dataset& d, std::optional<std::uint32_t> before, std::optional<std::uint32_t> owner)
{
    if (!has_registry())
        return;
    const auto view = existing_view(d);
    // The view looked at before (CREATE OR REPLACE keeps its OID), or, when
    // there was none, one this publish created: its owner is the registered
    // owner (publish hands it over); another role's is not.
    const bool same_view = view && (!before || *before == view->oid);
    if (same_view && (!owner || view->owner == *owner))
        return;
    throw UserError(
        sqlstate::kDuplicateTable, "view \"" + d.display + "\" was created by another role while the version was built",
        view ? "It belongs to role \"" + pg::role_name(view->owner) + "\"" +
                   (owner ? ", not to the dataset's registered owner \"" + pg::role_name(*owner) + "\"." : ".")
             : std::string(),
        "Nothing was published. Drop that view, or let its owner adopt it: SELECT idem.adopt(" +
            pg::quote_literal(d.qualified) + ").");
}

void flip(pg::SpiSession& spi, const Dataset& d, std::uint32_t version_table,
          const std::optional<std::string>& lock_timeout)
{
    const pg::Relation table = pg::describe_relation(version_table);
    std::vector<std::string> cols;
    for (const auto& c : table.columns)
        cols.push_back(pg::quote_ident(c.name));
    const std::string sql =
        "CREATE OR REPLACE VIEW " + d.qualified + " AS " + core::select_columns(cols, table.qualified);
    auto run = [&] {
        try {
            spi.execute(sql);
        } catch (pg::PgError& e) {
            if (pg::error_sqlstate(e) != sqlstate::kInvalidTableDefinition)
                throw;
            throw UserError(
                sqlstate::kInvalidTableDefinition,
                "the new version of dataset \"" + d.display + "\" removes, renames or retypes a column",
                "A version may append columns; the view readers query cannot lose or change one.",
                "Keep the old columns (add new ones at the end), or drop the view and its dependents first.");
        }
    };
    if (lock_timeout)
        pg::with_lock_timeout(pg::lock_timeout_setting(spi, *lock_timeout), run);
    else
        run();
}

// The flip's bookkeeping: the current version, and the view (its OID, which
// a view dropped and made again by someone else does not have).
void set_current(pg::SpiSession& spi, const Dataset& d, int version, std::optional<int> next)
{
    const auto view = existing_view(d);
    pg::as_extension_owner([&] {
        spi.query_saved(
            std::string("UPDATE idem.datasets SET current_version = $3::pg_catalog.int4,"
                        " next_version = COALESCE($4::pg_catalog.int4, next_version), flipped_at = pg_catalog.now()") +
                (has_registry() ? ", view_relid = $5::pg_catalog.oid::pg_catalog.regclass" : "") +
                " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2",
            {Param::of_text(d.schema), Param::of_text(d.name), Param::of_int4(version),
             next ? Param::of_int4(*next) : Param::of_text(std::nullopt), Param::of_oid(view ? view->oid : 0)});
    });
}

// The registered owner of a dataset is the role that first published it (or
// the owner of the view a DBA adopted): recorded once, never changed by a
// later publisher.
std::uint32_t registered_owner(pg::SpiSession& spi, const Dataset& d, const State& state)
{
    if (state.owner)
        return *state.owner;
    if (!has_registry()) {
        const auto view = existing_view(d);  // 0.6.0: the view's owner
        return view ? view->owner : pg::current_user_id();
    }
    const std::uint32_t owner = pg::current_user_id();
    pg::as_extension_owner([&] {
        spi.query_saved(
            "UPDATE idem.datasets SET owner = $3::pg_catalog.oid::pg_catalog.regrole"
            " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2",
            {Param::of_text(d.schema), Param::of_text(d.name), Param::of_oid(owner)});
    });
    return owner;
}

// Whether an old version that could not be dropped is kept (with a
// WARNING) rather than ending the publish: another object depends on it
// (2BP01), someone reads it (55P03), or the caller may not drop it (42501).
// Anything else (a cancel, a statement timeout, a deadlock, out of memory)
// ends the statement, and the publish rolls back: 0.8.0 kept the version
// with a WARNING for every error, 57014 included.
bool keeps_version(const pg::PgError& error)
{
    const std::string code = pg::error_sqlstate(error);
    return code == sqlstate::kDependentObjectsStillExist || code == sqlstate::kLockNotAvailable ||
           code == sqlstate::kInsufficientPrivilege;
}

// Drops one old version table, taking its lock NOWAIT: the flip holds the
// view's lock until the caller's transaction ends, so waiting here for a
// report that reads the old table directly would keep every reader of the
// view waiting too. A busy version is kept and dropped by a later publish.
std::optional<pg::PgError> drop_version_table(pg::SpiSession& spi, std::uint32_t relation)
{
    const pg::Relation table = pg::describe_relation(relation, pg::RelationLock::kNone);  // locked below
    return pg::try_in_subtransaction([&] {
        spi.execute("LOCK TABLE " + table.qualified + " IN ACCESS EXCLUSIVE MODE NOWAIT");
        spi.execute("DROP TABLE " + table.qualified);
    });
}

// Keeps the newest `keep`, the pinned and the current version; drops the
// rest (keeps_version says which failures keep one).
void retain(pg::SpiSession& spi, const Dataset& d, int keep, int current)
{
    const pg::Step step("dropping the versions beyond keep");
    auto all = load_versions(spi, d);
    std::sort(all.begin(), all.end(), [](const Version& a, const Version& b) { return a.number > b.number; });
    for (std::size_t i = 0; i < all.size(); ++i) {
        const Version& v = all[i];
        if (i < static_cast<std::size_t>(keep) || v.pinned || v.number == current)
            continue;
        if (pg::relation_exists(v.relation)) {
            if (const auto failed = drop_version_table(spi, v.relation)) {
                if (!keeps_version(*failed))
                    throw *failed;
                pg::warning("version " + std::to_string(v.number) + " of dataset \"" + d.display +
                                "\" is kept: it could not be dropped",
                            pg::error_message(*failed));
                continue;
            }
        }  // else: dropped by hand already; its record goes too
        pg::as_extension_owner([&] {
            spi.query_saved(
                "DELETE FROM idem.dataset_versions WHERE schema_name OPERATOR(pg_catalog.=) $1"
                " AND view_name OPERATOR(pg_catalog.=) $2 AND version OPERATOR(pg_catalog.=) $3::pg_catalog.int4",
                {Param::of_text(d.schema), Param::of_text(d.name), Param::of_int4(v.number)});
        });
    }
}

// The run history's row for publish and rollback: the unit is the version
// the view shows afterwards; rows are that version's. Only publishing a new
// version writes rows (the version table); a rollback flips the view.
void record_publish(pg::SpiSession& spi, const RunClock& clock, const char* function, const Dataset& d, int version,
                    const char* action, std::int64_t rows, bool changed, const std::string& params = "")
{
    RunRecord run;
    run.function = function;
    run.target = d.display;
    run.unit = d.schema + "." + version_table_name(d.name, version);
    run.action = action;
    run.counts = {{"version", version}, {"rows", rows}};
    run.rows_written = std::string(action) == "published" ? rows : 0;
    run.changed = changed;
    run.params = params;
    record_run(spi, clock, run);
}

// A query's or a relation's columns, as "name type," each: two versions
// with the same rows but renamed or retyped columns are not the same content.
std::string shape_of(const std::vector<pg::Column>& columns)
{
    std::string shape;
    for (const auto& c : columns)
        shape += pg::quote_ident(c.name) + " " + c.qualified_type + ",";
    return shape;
}

// The current version, when it holds the same content as the query's rows:
// the same checksum and shape, with its view and version table still in
// place. Read as the extension owner, before any lock.
std::optional<int> same_as_current(pg::SpiSession& spi, const Dataset& d, const std::string& checksum,
                                   const std::string& shape)
{
    std::optional<int> same;
    std::optional<std::uint32_t> relation;
    std::optional<std::string> recorded_view;
    pg::as_extension_owner([&] {
        auto r = spi.query_saved(
            std::string("SELECT v.version::pg_catalog.text, v.relation::pg_catalog.oid::pg_catalog.text,") +
                (has_registry() ? " d.view_relid::pg_catalog.oid::pg_catalog.text" : " NULL") +
                " FROM idem.datasets d JOIN idem.dataset_versions v"
                " ON v.schema_name OPERATOR(pg_catalog.=) d.schema_name"
                " AND v.view_name OPERATOR(pg_catalog.=) d.view_name"
                " AND v.version OPERATOR(pg_catalog.=) d.current_version"
                " WHERE d.schema_name OPERATOR(pg_catalog.=) $1 AND d.view_name OPERATOR(pg_catalog.=) $2"
                " AND v.checksum OPERATOR(pg_catalog.=) $3",
            {Param::of_text(d.schema), Param::of_text(d.name), Param::of_text(checksum)});
        if (!r.rows.empty()) {
            same = std::stoi(r.rows[0][0].value_or("0"));
            relation = static_cast<std::uint32_t>(std::stoul(r.rows[0][1].value_or("0")));
            recorded_view = r.rows[0][2];
        }
    });
    if (!same)
        return std::nullopt;
    auto view = spi.query_saved(
        "SELECT pg_catalog.to_regclass($1)::pg_catalog.oid::pg_catalog.text,"
        " (SELECT c.oid::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $2)",
        {Param::of_text(d.qualified), Param::of_oid(*relation)});
    if (!view.rows.at(0)[0] || !view.rows.at(0)[1] || (recorded_view && view.rows[0][0] != recorded_view))
        return std::nullopt;  // the view or the version table is gone, or another view: publish anew
    if (shape_of(pg::describe_relation(*relation).columns) != shape)
        return std::nullopt;
    return same;
}

// lock_timeout bounds every wait publish causes: the dataset's row (a
// concurrent publish of it) and the view.
State lock_state_within(pg::SpiSession& spi, const Dataset& d, const std::optional<std::string>& lock_timeout)
{
    State state;
    if (lock_timeout)
        pg::with_lock_timeout(pg::lock_timeout_setting(spi, *lock_timeout), [&] { state = lock_state(spi, d); });
    else
        state = lock_state(spi, d);
    return state;
}

// A new immutable version table, built as the caller and owned by the
// dataset's registered owner (readers reach it through the view, with the
// view owner's rights, never whoever owns a view by that name).
struct VersionTable {
    std::string qualified;
    std::uint32_t oid = 0;
    std::uint64_t rows = 0;
    // The stored table's checksum (a volatile query, or writes between two
    // runs of it, cannot make the record lie), and the sample of its rows'
    // hashes (version_check.hpp; hex).
    std::string checksum;
    std::string sample;
};

// The distributed table a version table on Citus is colocated with: the
// first one the query reads whose distribution column is a column of the
// version table, by name and type (its rows are placed as the source's).
std::optional<std::pair<std::uint32_t, std::string>> colocation_source(pg::SpiSession& spi, const std::string& query,
                                                                       const pg::Params& params,
                                                                       std::uint32_t version_table)
{
    const pg::Relation built = pg::describe_relation(version_table);
    for (const std::uint32_t relid : pg::query_relations(query, params)) {
        const CitusTable source = citus_table(spi, relid);
        if (source.kind != CitusKind::kDistributed)
            continue;
        const pg::Relation rel = pg::describe_relation(relid);
        for (const auto& c : built.columns)
            for (const auto& s : rel.columns)
                if (c.name == source.distribution_column && s.name == c.name && s.type_oid == c.type_oid)
                    return std::make_pair(relid, c.name);
    }
    return std::nullopt;
}

// A version table on Citus, in Citus's metadata (a view over a table
// outside it stays on this node, with a WARNING at every flip, and workers
// could not read the dataset): distributed and colocated with a distributed
// table the query reads, by its distribution column, when the version
// table has that column; else a Citus local table on this node. The query
// runs once: the table is made empty, placed, then filled.
std::uint64_t build_on_citus(pg::SpiSession& spi, const std::string& table, const std::string& query,
                             const pg::Params& params)
{
    spi.execute("CREATE TABLE " + table + " AS " + query + "\n WITH NO DATA", params);
    const auto oid = static_cast<std::uint32_t>(
        std::stoul(spi.query("SELECT $1::pg_catalog.regclass::pg_catalog.oid::pg_catalog.text", {Param::of_text(table)})
                       .rows.at(0)
                       .at(0)
                       .value_or("0")));
    if (const auto source = colocation_source(spi, query, params, oid))
        spi.query(
            "SELECT pg_catalog.create_distributed_table($1::pg_catalog.regclass, $2, colocate_with => "
            "$3::pg_catalog.regclass::pg_catalog.text)",
            {Param::of_text(table), Param::of_text(source->second), Param::of_oid(source->first)});
    else
        spi.query("SELECT pg_catalog.citus_add_local_table_to_metadata($1::pg_catalog.regclass)",
                  {Param::of_text(table)});
    return spi.execute("INSERT INTO " + table + " SELECT * FROM (" + query + "\n) AS idem_version", params);
}

// Hashes the rows of a planned statement into t's checksum and sample;
// with store, each is also stored into t as it comes (the query's one pass
// builds the version).
void hash_rows(pg::SpiSession& spi, VersionTable& t, pg::PlannedRows plan, const pg::Params& params, bool store)
{
    const auto hasher = std::make_unique<core::RowHasher>();
    const auto sample = std::make_unique<core::RowSampleBuilder>();
    core::MultisetDigest digest;
    pg::DigestTargets targets;
    targets.hasher = hasher.get();
    targets.digest = &digest;
    targets.sample = sample.get();
    targets.store_into = store ? t.oid : 0;
    pg::digest_statement_rows_into(spi, plan, targets, params);
    t.checksum = digest.text();
    t.sample = sample->hex();
    if (store)
        t.rows = digest.count();
}

// The version table: made empty with the query's columns, then filled by
// the query's one run, each row hashed as it is stored (CREATE TABLE AS,
// then a scan for the checksum, read it twice: 1.33x to 1.52x a
// hand-written publish), planned once for the check and this run (plan).
// On Citus, placed first and filled by INSERT, then read for the checksum.
VersionTable build_version_table(pg::SpiSession& spi, const Dataset& d, int version, const std::string& query,
                                 pg::PlannedRows plan, const pg::Params& params, std::uint32_t owner)
{
    VersionTable t;
    const std::string name = free_version_table_name(d, version);
    t.qualified = pg::quote_ident(d.schema) + "." + pg::quote_ident(name);
    if (citus_installed()) {
        t.rows = build_on_citus(spi, t.qualified, query, params);
        t.oid = pg::relation_oid(d.schema, name);
        hash_rows(spi, t, spi.prepare_rows("SELECT * FROM " + t.qualified), {}, false);
    } else {
        spi.execute("CREATE TABLE " + t.qualified + " AS " + query + "\n WITH NO DATA", params);
        t.oid = pg::relation_oid(d.schema, name);
        hash_rows(spi, t, plan, params, true);
    }
    pg::comment_on_relation(t.oid, "pg_idempotent: version " + std::to_string(version) + " of dataset " + d.display +
                                       " (immutable; readers query the view)");
    if (owner != pg::current_user_id())
        spi.execute("ALTER TABLE " + t.qualified + " OWNER TO " + pg::quote_ident(pg::role_name(owner)));
    return t;
}

// Write-audit-publish: the audit sees the candidate as idem_candidate (a
// CTE, not a temporary object; the audit a subquery, so it may have a WITH
// of its own) and must answer true.
void run_audit(pg::SpiSession& spi, const Dataset& d, int version, const VersionTable& t, const std::string& audit,
               const pg::Params& params)
{
    auto r = spi.query("WITH idem_candidate AS (SELECT * FROM " + t.qualified + ") SELECT * FROM " +
                           core::as_subquery(audit) + " AS idem_audit",
                       params);
    if (r.rows.size() != 1 || r.rows[0].size() != 1)
        throw UserError(
            sqlstate::kInvalidParameterValue, "the audit must return exactly one boolean",
            "It returned " + std::to_string(r.rows.size()) + " rows of " +
                std::to_string(r.rows.empty() ? 0 : r.rows[0].size()) + " columns.",
            "Write the audit as one query returning one boolean, for example SELECT count(*) > 0 FROM {version}.");
    if (r.rows[0][0] != std::optional<std::string>("t"))
        throw UserError(sqlstate::kCheckViolation,
                        "audit of dataset \"" + d.display + "\" failed: nothing was published",
                        "The audit returned " + r.rows[0][0].value_or("NULL") + " for the candidate version " +
                            std::to_string(version) + " (" + std::to_string(t.rows) + " rows).",
                        "Readers still see the current version.");
}

// The new version's row and the dataset's pointer to it, in one statement
// (set_current's UPDATE, as a CTE's companion): the version is current
// from here on, its successor number the next.
void register_current_version(pg::SpiSession& spi, const Dataset& d, int version, const VersionTable& t)
{
    const bool samples = sql_has(SqlFeature::kVersionSamples);
    const auto view = existing_view(d);
    pg::Params values = {Param::of_text(d.schema),
                         Param::of_text(d.name),
                         Param::of_int4(version),
                         Param::of_oid(t.oid),
                         Param::of_int8(static_cast<std::int64_t>(t.rows)),
                         Param::of_text(t.checksum),
                         Param::of_oid(view ? view->oid : 0)};
    if (samples)
        values.push_back(Param::of_text(t.sample));
    pg::as_extension_owner([&] {
        spi.query_saved(
            std::string("WITH idem_version AS (INSERT INTO idem.dataset_versions (schema_name, view_name, version, "
                        "relation, row_count, checksum") +
                (samples ? ", row_sample" : "") +
                ") VALUES ($1, $2, $3::pg_catalog.int4, $4::pg_catalog.oid::pg_catalog.regclass, "
                "$5::pg_catalog.int8, $6" +
                (samples ? ", pg_catalog.decode($8, 'hex'))" : ")") +
                ") UPDATE idem.datasets SET current_version = $3::pg_catalog.int4,"
                " next_version = $3::pg_catalog.int4 OPERATOR(pg_catalog.+) 1, flipped_at = pg_catalog.now()" +
                (has_registry() ? ", view_relid = $7::pg_catalog.oid::pg_catalog.regclass" : "") +
                " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2",
            values);
    });
}

// The view now reads the new version. A view this publish created (a member
// of the registered owner's role publishing after the view was dropped) goes
// to the registered owner, as the version tables do; then the version is
// registered as the current one.
void flip_to_version(pg::SpiSession& spi, const Dataset& d, int version, const VersionTable& t,
                     const std::optional<std::uint32_t>& view_before, std::uint32_t owner,
                     const std::optional<std::string>& lock_timeout)
{
    flip(spi, d, t.oid, lock_timeout);
    if (const auto view = existing_view(d);
        view && view->owner == pg::current_user_id() && owner != pg::current_user_id())
        spi.execute("ALTER VIEW " + d.qualified + " OWNER TO " + pg::quote_ident(pg::role_name(owner)));
    require_view_kept(d, view_before, owner);
    register_current_version(spi, d, version, t);
}

}  // namespace

std::int32_t publish(const std::string& dataset, const std::string& query, std::int32_t keep,
                     const std::optional<std::string>& audit, const std::optional<std::string>& lock_timeout,
                     const pg::QueryParams& params)
{
    if (keep < 1)
        throw UserError(sqlstate::kInvalidParameterValue, "keep must be at least 1",
                        "The current version is always kept.", "Pass keep => 1 or more.");
    const RunClock clock;
    pg::SpiSession spi;
    const Dataset d = resolve(spi, dataset);
    check_scope_usage(spi, ScopeKind::kDataset, d.qualified, d.display);
    // Held (hold.hpp): nothing is built; readers keep the current version.
    if (const auto held = dataset_hold(spi, d)) {
        const int current = lock_state(spi, d).current.value_or(0);
        pg::notice("dataset \"" + d.display + "\" is held by " + held->by + ": nothing was published",
                   "Readers keep version " + std::to_string(current) + "; idem.dataset_status(" +
                       pg::quote_literal(d.display) + ") tells since when, and SELECT idem.release(" +
                       pg::quote_literal(d.display) + ") ends the hold.");
        record_publish(spi, clock, "publish", d, current, "held", 0, false, params.history_json);
        spi.finish();
        return current;
    }
    // The query's rows, checksummed without writing anything (as the caller),
    // and compared with the current version before any lock is taken: an
    // identical republish writes nothing at all, not even a row lock.
    pg::require_bound(query, params, "the query");
    if (audit)
        pg::require_bound(*audit, params, "the audit");
    QueryCheck check = check_against_current(spi, d, query, params.values);
    const std::string shape = shape_of(check.columns);
    // The same content: a rerun publishes nothing (and records that).
    auto unchanged = [&](int same) {
        record_publish(spi, clock, "publish", d, same, "unchanged", static_cast<std::int64_t>(check.digest.count()),
                       false, params.history_json);
        spi.finish();
        return same;
    };
    if (!check.differs)
        if (auto same = same_as_current(spi, d, check.digest.text(), shape))
            return unchanged(*same);
    const State state = lock_state_within(spi, d, lock_timeout);
    // A concurrent publish may have won the lock first, of other content
    // (then the query is checked again, against it) or of the same.
    if (check.differs && state.current != check.against)
        check = check_against_current(spi, d, query, params.values, check.plan);
    if (!check.differs)
        if (auto same = same_as_current(spi, d, check.digest.text(), shape))
            return unchanged(*same);
    const std::optional<std::uint32_t> view_before = require_own_view(d, state);
    const std::uint32_t owner = registered_owner(spi, d, state);

    const int version = state.next;
    const VersionTable table = build_version_table(spi, d, version, query, check.plan, params.values, owner);
    if (audit)
        run_audit(spi, d, version, table, *audit, params.values);
    flip_to_version(spi, d, version, table, view_before, owner, lock_timeout);
    retain(spi, d, keep, version);
    record_publish(spi, clock, "publish", d, version, "published", static_cast<std::int64_t>(table.rows), true,
                   params.history_json);
    spi.finish();
    return version;
}

std::int32_t rollback(const std::string& dataset, std::optional<std::int32_t> version,
                      const std::optional<std::string>& lock_timeout, bool hold_it)
{
    const RunClock clock;
    pg::SpiSession spi;
    const Dataset d = resolve(spi, dataset);
    check_scope_usage(spi, ScopeKind::kDataset, d.qualified, d.display);
    const State state = lock_state(spi, d);
    const std::optional<std::uint32_t> view_before = require_own_view(d, state);
    const auto all = load_versions(spi, d);
    std::optional<Version> target;
    for (const auto& v : all) {
        if (version) {
            if (v.number == *version)
                target = v;
        } else if (state.current && v.number < *state.current) {
            target = v;  // the highest below the current (all is ascending)
        }
    }
    if (!target) {
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        version ? "dataset \"" + d.display + "\" has no version " + std::to_string(*version)
                                : "dataset \"" + d.display + "\" has no earlier version to roll back to",
                        {}, "idem.versions lists the versions that are kept.");
    }
    const bool flipped = !state.current || target->number != *state.current;
    if (flipped) {
        flip(spi, d, target->relation, lock_timeout);
        require_view_kept(d, view_before, state.owner);
        set_current(spi, d, target->number, std::nullopt);
    }
    if (hold_it) {
        require_sql(SqlFeature::kDatasetHolds, "idem.rollback with hold");
        set_hold(spi, d);
    }
    record_publish(spi, clock, "rollback", d, target->number, flipped ? "rolled back" : "unchanged", target->row_count,
                   flipped || hold_it);
    spi.finish();
    return target->number;
}

void adopt(const std::string& dataset)
{
    pg::SpiSession spi;
    if (!has_registry())
        throw UserError(sqlstate::kObjectNotInPrerequisiteState, "idem.adopt needs pg_idempotent 0.7.0's SQL objects",
                        {}, "Run ALTER EXTENSION pg_idempotent UPDATE.");
    const Dataset d = resolve(spi, dataset);
    check_scope_usage(spi, ScopeKind::kDataset, d.qualified, d.display);
    const auto view = existing_view(d);
    if (!view || view->kind != 'v')
        throw UserError(sqlstate::kUndefinedTable, "view \"" + d.display + "\" does not exist", {},
                        "adopt takes an existing view; publish creates a new one itself.");
    if (!pg::current_user_has_privileges_of(view->owner))
        throw UserError(sqlstate::kInsufficientPrivilege, "must be the owner of view \"" + d.display + "\" to adopt it",
                        "Its owner, \"" + pg::role_name(view->owner) + "\", becomes the owner of every version.",
                        "Ask the view's owner (or a superuser) to call idem.adopt.");
    const State state = lock_state(spi, d);
    if (state.owner && *state.owner != view->owner && !pg::current_user_has_privileges_of(*state.owner))
        throw UserError(sqlstate::kInsufficientPrivilege,
                        "dataset \"" + d.display + "\" is registered to role \"" + pg::role_name(*state.owner) + "\"",
                        "Only that role (or a superuser) can hand it to the view's owner.",
                        "Ask that role or a superuser to call idem.adopt.");
    pg::as_extension_owner([&] {
        spi.query_saved(
            "UPDATE idem.datasets SET view_relid = $3::pg_catalog.oid::pg_catalog.regclass,"
            " owner = $4::pg_catalog.oid::pg_catalog.regrole"
            " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2",
            {Param::of_text(d.schema), Param::of_text(d.name), Param::of_oid(view->oid), Param::of_oid(view->owner)});
    });
    spi.finish();
}

void versions(const pg::ResultSet& out, const std::string& dataset)
{
    pg::SpiSession spi;
    const Dataset d = resolve(spi, dataset);
    check_scope_usage(spi, ScopeKind::kDataset, d.qualified, d.display);
    pg::as_extension_owner([&] {
        spi.return_rows(
            out,
            "SELECT v.version, v.relation, v.row_count, v.checksum, v.created_at,"
            " COALESCE(v.version OPERATOR(pg_catalog.=) d.current_version, false), v.pinned"
            " FROM idem.dataset_versions v JOIN idem.datasets d"
            " ON d.schema_name OPERATOR(pg_catalog.=) v.schema_name AND d.view_name OPERATOR(pg_catalog.=) v.view_name"
            " WHERE v.schema_name OPERATOR(pg_catalog.=) $1 AND v.view_name OPERATOR(pg_catalog.=) $2"
            " ORDER BY v.version",
            {Param::of_text(d.schema), Param::of_text(d.name)}, true);
    });
    spi.finish();
}

void pin(const std::string& dataset, std::int32_t version, bool pinned)
{
    pg::SpiSession spi;
    const Dataset d = resolve(spi, dataset);
    check_scope_usage(spi, ScopeKind::kDataset, d.qualified, d.display);
    bool found = false;
    pg::as_extension_owner([&] {
        auto r = spi.query_saved(
            "UPDATE idem.dataset_versions SET pinned = $4::pg_catalog.bool"
            " WHERE schema_name OPERATOR(pg_catalog.=) $1 AND view_name OPERATOR(pg_catalog.=) $2"
            " AND version OPERATOR(pg_catalog.=) $3::pg_catalog.int4 RETURNING true",
            {Param::of_text(d.schema), Param::of_text(d.name), Param::of_int4(version), Param::of_bool(pinned)});
        found = !r.rows.empty();
    });
    if (!found)
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "dataset \"" + d.display + "\" has no version " + std::to_string(version), {},
                        "idem.versions lists the versions that are kept.");
    spi.finish();
}

}  // namespace pg_idempotent
