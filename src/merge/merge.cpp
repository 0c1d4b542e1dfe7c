#include "merge/merge.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "common/batch_source.hpp"
#include "common/citus_tables.hpp"
#include "common/conflict_tally.hpp"
#include "common/installed_sql.hpp"
#include "common/partition_prune.hpp"
#include "common/run_history.hpp"
#include "common/schema_drift.hpp"
#include "core/sql_text.hpp"
#include "merge/merge_sql.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/step.hpp"
#include "pg/transactions.hpp"
#include "pg/unit_lock.hpp"

namespace pg_idempotent {

namespace {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

void require_unique_index(const pg::Relation& target, const std::vector<std::string>& key,
                          const std::vector<pg::UniqueIndex>& indexes)
{
    if (has_unique_index_on(key, indexes))
        return;
    std::vector<std::string> quoted;
    for (const auto& k : key)
        quoted.push_back(pg::quote_ident(k));
    throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                    "no unique index on \"" + target.display + "\" covers exactly the key (" + core::join(key) + ")",
                    "A merge needs a unique index or primary key on exactly the key columns (valid, "
                    "not deferrable, not partial, no expressions) to find each row and to insert safely "
                    "under concurrency.",
                    "CREATE UNIQUE INDEX ON " + target.qualified + " (" + core::join(quoted) + ");" +
                        (target.kind == 'p' ? " On a partitioned table the key must include the partition key." : ""));
}

// The run history's row for a merge (not for a dry run, which writes nothing).
void record_merge(pg::SpiSession& spi, const RunClock& clock, const pg::Relation& target, const SourceShape& src,
                  const pg::QueryResult& counts)
{
    const std::optional<pg::Relation>& source = src.relation;
    static const char* const names[] = {"inserted", "updated", "deleted", "unchanged", "stale"};
    RunRecord run;
    run.function = source ? "merge" : "merge_query";
    run.target = target.display;
    if (source)
        run.unit = source->display;
    std::int64_t written = 0;
    for (std::size_t i = 0; i < 5; ++i) {
        const std::int64_t n = std::stoll(counts.rows.at(0).at(i).value_or("0"));
        run.counts.emplace_back(names[i], n);
        if (i < 3)
            written += n;
    }
    run.rows_written = written;
    run.changed = written > 0;
    run.action = run.changed ? "merged" : "unchanged";
    run.params = src.params.history_json;
    record_run(spi, clock, run);
}

// The target: a table or a partitioned table.
pg::Relation describe_target(std::uint32_t target_oid)
{
    return describe_table_target(target_oid, "idem.merge writes into a table or a partitioned table.");
}

bool is_version_column(const MergeOptions& options, const std::string& name)
{
    return std::find(options.version_columns.begin(), options.version_columns.end(), name) !=
           options.version_columns.end();
}

void check_version_column(const std::string& v, const SourceShape& src, const pg::Relation& target,
                          const std::vector<std::string>& key)
{
    if (find_column(src.columns, v) == nullptr)
        throw UserError(sqlstate::kUndefinedColumn, "version column \"" + v + "\" is missing from the source", {},
                        "Select the version column in the source, or leave out version_column.");
    if (find_column(target.columns, v) == nullptr)
        throw UserError(sqlstate::kUndefinedColumn,
                        "version column \"" + v + "\" does not exist in \"" + target.display + "\"", {},
                        "Name a column of the target as version_column.");
    if (std::find(key.begin(), key.end(), v) != key.end())
        throw UserError(sqlstate::kInvalidParameterValue, "the version column cannot be a key column", {},
                        "Pass a column that grows with each change of a row, such as updated_at, as version_column.");
}

// Each version column (checked as one is), named once; several need an
// ordering each (the btree operators, 42883 otherwise, from plan_version).
void check_version_columns(const std::vector<std::string>& names, const SourceShape& src, const pg::Relation& target,
                           const std::vector<std::string>& key)
{
    std::set<std::string> seen;
    for (const auto& v : names) {
        if (!seen.insert(v).second)
            throw UserError(sqlstate::kDuplicateColumn, "version column \"" + v + "\" is named more than once", {},
                            "Name each version column once: the first decides, the next breaks its ties.");
        check_version_column(v, src, target, key);
    }
}

void check_delete_column(const std::string& d, const SourceShape& src, const MergeOptions& options,
                         const std::vector<std::string>& key)
{
    const pg::Column* dc = find_column(src.columns, d);
    if (dc == nullptr)
        throw UserError(sqlstate::kUndefinedColumn, "delete column \"" + d + "\" is missing from the source", {},
                        "Select the delete column in the source, or leave out delete_column.");
    if (!pg::is_boolean_type(dc->type_oid))
        throw UserError(sqlstate::kDatatypeMismatch, "delete column \"" + d + "\" must be boolean",
                        "It is " + dc->type_name + ".",
                        "Pass a boolean column (true: delete the row) as delete_column.");
    if (std::find(key.begin(), key.end(), d) != key.end() || is_version_column(options, d))
        throw UserError(sqlstate::kInvalidParameterValue, "the delete column cannot be a key or the version column", {},
                        "Pass a boolean column of its own as delete_column.");
}

// What an insert writes: every source column the target has (generated
// columns never), except the delete flag.
void plan_insert_columns(core::MergeSpec& spec, const SourceShape& src, const pg::Relation& target,
                         const MergeOptions& options)
{
    InsertColumnRules rules;
    rules.function = "idem.merge";
    rules.skip = options.delete_column;
    rules.ignore_extra = options.columns.has_value();  // with columns given, extra source columns are ignored
    // Drifted columns were settled before (schema_drift.hpp).
    rules.extra_detail = "Every source column is written unless columns is given.";
    rules.extra_hint = "Pass exclude_columns or on_schema_change.";
    rules.override_identity = spec.override_identity;
    rules.identity_hint =
        "Leave the column out of the source, or SET idem.override_identity = on to write it (OVERRIDING SYSTEM VALUE).";
    spec.insert_columns = insert_columns(src, target, rules);
}

void plan_keys(core::MergeSpec& spec, const pg::Relation& target, const std::vector<std::string>& key)
{
    for (const auto& k : key) {
        const pg::Column* tc = find_column(target.columns, k);
        spec.keys.push_back(pg::assignment_target(*tc));
        spec.key_eq.push_back(pg::btree_operator(tc->type_oid, 3, k));
    }
}

// What an update writes, with columns given: exactly those (and the version).
void plan_named_update_columns(core::MergeSpec& spec, const SourceShape& src, const pg::Relation& target,
                               const MergeOptions& options, const std::vector<std::string>& key)
{
    std::set<std::string> seen;
    for (const auto& c : *options.columns) {
        if (!seen.insert(c).second)
            throw UserError(sqlstate::kDuplicateColumn, "column \"" + c + "\" is named more than once in columns", {},
                            "Name each column once in columns.");
        const pg::Column* tc = find_column(target.columns, c);
        if (tc == nullptr)
            throw UserError(sqlstate::kUndefinedColumn,
                            "column \"" + c + "\" named in columns does not exist in \"" + target.display + "\"", {},
                            "Name only columns of the target in columns.");
        if (find_column(src.columns, c) == nullptr)
            throw UserError(sqlstate::kUndefinedColumn,
                            "column \"" + c + "\" named in columns is missing from the source", {},
                            "Select the column in the source, or leave it out of columns.");
        // dbt's merge_update_columns may list the unique key: it is equal in
        // source and target by definition, so there is nothing to write.
        if (std::find(key.begin(), key.end(), c) != key.end())
            continue;
        if (tc->generated != '\0' || tc->identity == 'a')
            throw UserError(sqlstate::kGeneratedAlways, "column \"" + c + "\" named in columns cannot be updated",
                            "It is a generated or GENERATED ALWAYS identity column.",
                            "Leave the column out of columns: the database computes it.");
        spec.update_columns.push_back(pg::assignment_target(*tc));
    }
    for (const auto& v : options.version_columns)
        if (seen.count(v) == 0)
            spec.update_columns.push_back(pg::assignment_target(*find_column(target.columns, v)));
}

// exclude_columns (dbt's merge_exclude_columns): target columns an update
// leaves alone, and staging columns the target lacks (left out of the batch:
// schema_drift.hpp, which refuses a name neither side has). Checked before
// anything is planned; returns them quoted, as MergeColumn names are.
std::set<std::string> check_exclude_columns(const MergeOptions& options, const std::vector<std::string>& key)
{
    std::set<std::string> quoted;
    if (!options.exclude_columns)
        return quoted;
    if (options.columns)
        throw UserError(sqlstate::kInvalidParameterValue, "columns and exclude_columns cannot both be given",
                        "columns names what an update writes; exclude_columns names what it leaves alone.",
                        "Pass one of them.");
    // A name given twice is harmless.
    for (const auto& c : *options.exclude_columns) {
        if (std::find(key.begin(), key.end(), c) != key.end())
            throw UserError(sqlstate::kInvalidParameterValue, "key column \"" + c + "\" cannot be in exclude_columns",
                            "An insert writes every key column and an update never writes one, so a key cannot "
                            "be excluded.",
                            "Leave the key columns out of exclude_columns.");
        if (is_version_column(options, c))
            throw UserError(sqlstate::kInvalidParameterValue, "the version column cannot be in exclude_columns",
                            "An update always writes the version column: it decides which row is newer.",
                            "Leave the version column out of exclude_columns.");
        if (options.delete_column == c)
            throw UserError(sqlstate::kInvalidParameterValue, "the delete column cannot be in exclude_columns",
                            "It says which source rows are deletes.",
                            "Leave the delete column out of exclude_columns.");
        quoted.insert(pg::quote_ident(c));
    }
    return quoted;
}

// What an update writes by default: what an insert writes but the keys,
// identity ALWAYS columns (which an insert may override, an update never)
// and the columns of exclude_columns.
void plan_default_update_columns(core::MergeSpec& spec, const pg::Relation& target,
                                 const std::set<std::string>& excluded)
{
    for (const auto& c : spec.insert_columns) {
        bool skip = excluded.count(c.name) > 0;
        for (const auto& k : spec.keys)
            skip = skip || k.name == c.name;
        for (const auto& tc : target.columns)
            if (pg::quote_ident(tc.name) == c.name && tc.identity == 'a')
                skip = true;
        if (!skip)
            spec.update_columns.push_back(c);
    }
}

// The version columns, in order; one column's own btree operators (several
// compare as rows, core/version_order.hpp, each by its type's ordering,
// which version_column requires of every one).
void plan_version(core::MergeSpec& spec, const pg::Relation& target, const std::vector<std::string>& names)
{
    for (const auto& name : names) {
        const pg::Column* vc = find_column(target.columns, name);
        spec.version.columns.push_back(pg::assignment_target(*vc));
        const std::string lt = pg::btree_operator(vc->type_oid, 1, vc->name);
        const std::string eq = pg::btree_operator(vc->type_oid, 3, vc->name);
        if (spec.version.lt.empty()) {
            spec.version.lt = lt;
            spec.version.eq = eq;
        }
        spec.version_types.push_back(vc->qualified_type);
    }
}

// The whole statement's plan, from the checked target, source and key.
core::MergeSpec plan_merge(const pg::Relation& target, const SourceShape& src, const MergeOptions& options,
                           const std::vector<std::string>& key, const CitusTable& citus,
                           const std::set<std::string>& excluded)
{
    core::MergeSpec spec;
    spec.target = target.qualified;
    spec.source_sql = src.sql;
    spec.override_identity = pg::override_identity();
    plan_insert_columns(spec, src, target, options);
    plan_keys(spec, target, key);
    if (options.columns)
        plan_named_update_columns(spec, src, target, options, key);
    else
        plan_default_update_columns(spec, target, excluded);
    if (!options.version_columns.empty())
        plan_version(spec, target, options.version_columns);
    if (options.delete_column)
        spec.delete_column = pg::quote_ident(*options.delete_column);
    spec.tombstones = !options.version_columns.empty() && options.delete_column.has_value();
    if (spec.tombstones && !sql_has(SqlFeature::kTombstonesOf))
        spec.tombstones_reader = "idem._tombstones";
    spec.delete_missing = options.delete_missing;
    spec.delete_scope = options.delete_scope;
    spec.allow_empty = options.allow_empty;
    spec.dry_run = options.dry_run;
    spec.partitioned = target.kind == 'p';
    spec.citus = citus.kind != CitusKind::kNone;
    const bool unique_source = source_unique_on_key(src, key, target);
    spec.check_nulls = !unique_source;
    spec.check_duplicates = !unique_source;
    // A table or materialized view reads the same in every scan of one
    // statement; a view, a foreign table or a query may not (volatile
    // functions, a remote server).
    spec.stable_source = src.stable();
    // A source unique on the key: nothing else reads all of its rows, so plan
    // counts the unchanged ones instead of a second scan (0.15 s of 1.8 s at
    // 1M rows, 10% changed).
    spec.count_unchanged = unique_source && sql_has(SqlFeature::kConflictTally) && !spec.citus;
    if (spec.check_duplicates)
        spec.hash_keys = keys_hashable(target, key);
    spec.pairwise_images = compares_images_pairwise(spec.citus);
    return spec;
}

// Merges of one target run one after another. Each takes its row locks in
// two passes (the new keys as it inserts them, then the rows it updates or
// deletes), each in key order; two merges that see one key differently (new
// to one, committed meanwhile by the other) would take them in orders that
// cross, and one would fail with a deadlock. A merge that waited here sees
// what the first one committed: a rerun finds nothing to do. The lock is the
// extension's own (pg/unit_lock.hpp). The privileges the statement needs are
// checked before it: a role that may not write the target cannot queue on it
// (nor hold it). delete_missing is also serialized with every other writer.
void lock_target(pg::SpiSession& spi, const pg::Relation& target, const MergeOptions& options)
{
    using P = pg::TablePrivilege;
    if (options.delete_missing || options.delete_column.has_value())
        pg::require_table_privileges(target.oid, {P::kSelect, P::kInsert, P::kUpdate, P::kDelete}, "idem.merge");
    else
        pg::require_table_privileges(target.oid, {P::kSelect, P::kInsert, P::kUpdate}, "idem.merge");
    pg::lock_unit(pg::UnitLockSpace::kMergeTarget, target.oid, pg::UnitLockMode::kExclusive);
    if (options.delete_missing)
        spi.execute("LOCK TABLE " + target.qualified + " IN SHARE ROW EXCLUSIVE MODE");
}

// Whether the target has no row the caller can see (under the merge lock:
// no other merge can fill it meanwhile); of a pruned merge, in the
// partitions of the batch's values, the only ones its keys can be in.
bool target_is_empty(pg::SpiSession& spi, const core::MergeSpec& spec, const pg::Relation& target,
                     const std::optional<pg::Param>& prune_values)
{
    std::string sql = "SELECT NOT EXISTS (SELECT 1 FROM " + target.qualified + " AS t";
    pg::Params params;
    if (spec.prune && prune_values) {
        core::PartitionPrune alone = *spec.prune;
        alone.first = 1;
        sql += " WHERE true" + core::prune_condition(alone, "t");
        params.push_back(*prune_values);
    }
    return spi.query(sql + ")", params).rows.at(0).at(0) == "t";
}

// Runs merge's statement under the settings it needs. Without JIT: the
// statement's cost is the sum of its steps, which at a million rows passes
// jit_optimize_above_cost and jit_inline_above_cost, and compiling its
// expressions took 0.66 s of a 3 s merge (bench/README), where the
// hand-written MERGE's smaller estimate never compiles.
void with_merge_settings(const std::function<void()>& fn)
{
    pg::with_settings({{"jit", "off"}}, fn);
}

// The first load's counts: the rows its INSERT processed were inserted or
// updated; the conflicts were counted as they came (conflict_tally.hpp).
pg::QueryResult first_load(pg::SpiSession& spi, const core::MergeSpec& spec, std::uint32_t target_oid,
                           const pg::QueryParams& caller)
{
    reset_conflicts(target_oid);
    const pg::Step step("loading the batch into the empty target");
    std::uint64_t processed = 0;
    with_merge_settings([&] {
        processed = spi.query(core::build_first_load_sql(spec),
                              pg::with_caller_params({pg::Param::of_oid(target_oid)}, caller), true)
                        .processed;
    });
    const ConflictCounts met = conflicts(target_oid);
    const auto inserted = static_cast<std::int64_t>(processed) - met.differ;
    pg::QueryResult counts;
    counts.rows.push_back({std::to_string(inserted), std::to_string(met.differ), "0", std::to_string(met.same), "0"});
    return counts;
}

// The merge statement itself (build_merge_sql), with the unchanged keys plan
// counted added to its counts.
pg::QueryResult merge_statement(pg::SpiSession& spi, const core::MergeSpec& spec, const pg::Relation& target,
                                const pg::Params& params)
{
    reset_conflicts(target.oid);
    pg::QueryResult counts;
    with_merge_settings([&] { counts = spi.query(core::build_merge_sql(spec), params, true); });
    if (spec.count_unchanged) {  // the keys plan counted as it left them out
        auto& unchanged = counts.rows.at(0).at(3);
        unchanged = std::to_string(std::stoll(unchanged.value_or("0")) + conflicts(target.oid).same);
    }
    return counts;
}

// One row of counts: inserted, updated, deleted, unchanged, stale. A first
// load into an empty target is the INSERT ... ON CONFLICT a user would
// write (merge_sql.hpp); when the source has a NULL or repeated key, that
// attempt is rolled back and the whole statement runs, which explains the
// NULLs and collapses or refuses the repeats. A pruned statement whose
// source turned out to have rows of other partitions is rolled back and
// run again without pruning.
pg::QueryResult run_merge(pg::SpiSession& spi, core::MergeSpec spec, const pg::Relation& target,
                          const pg::QueryParams& caller, const std::optional<pg::Param>& prune_values)
{
    if (core::first_load_applies(spec) && sql_has(SqlFeature::kConflictTally) &&
        target_is_empty(spi, spec, target, prune_values)) {
        pg::QueryResult counts;
        const auto failed = pg::try_in_subtransaction([&] { counts = first_load(spi, spec, target.oid, caller); });
        if (!failed)
            return counts;
        const std::string code = pg::error_sqlstate(*failed);
        if (code != sqlstate::kNotNullViolation && code != sqlstate::kCardinalityViolation)
            throw *failed;
    }
    const pg::Step step("merging the batch into the target");
    pg::Params params = pg::with_caller_params({pg::Param::of_oid(target.oid)}, caller);
    if (!spec.prune || !prune_values)
        return merge_statement(spi, spec, target, params);
    pg::QueryResult counts;
    params.push_back(*prune_values);
    const auto failed = pg::try_in_subtransaction([&] { counts = merge_statement(spi, spec, target, params); });
    if (!failed)
        return counts;
    if (pg::error_sqlstate(*failed) != sqlstate::kPruneMissed)
        throw *failed;
    spec.prune.reset();
    params.pop_back();
    return merge_statement(spi, spec, target, params);
}

// A partitioned target whose one partition key column is a key column
// (merge_sql.hpp, PartitionPrune): the batch's values of that column, read
// by one pass over the source, as the statement's last parameter; nothing
// when the target is not such a table, delete_missing reads every partition
// anyway, or the batch has more than 1,000 values (a backfill of years).
std::optional<pg::Param> prune_to_batch(pg::SpiSession& spi, core::MergeSpec& spec, const pg::Relation& target,
                                        const pg::QueryParams& caller, const MergeOptions& options)
{
    const std::optional<pg::Column> column = single_partition_column(target);
    if (!column || options.delete_missing || spec.citus)
        return std::nullopt;
    const std::string quoted = pg::quote_ident(column->name);
    for (std::size_t i = 0; i < spec.keys.size(); ++i) {
        if (spec.keys[i].name != quoted)
            continue;
        core::PartitionPrune prune{spec.keys[i], spec.key_eq[i], false, static_cast<int>(caller.values.size()) + 2,
                                   sqlstate::kPruneMissed};
        std::optional<pg::Param> values = read_batch_values(spi, spec.source_sql, prune, column->type_oid, caller);
        if (values)
            spec.prune = prune;
        return values;
    }
    return std::nullopt;
}

// The source columns the target lacks (schema_drift.hpp); with columns
// given, extra source columns are not written and need nothing. A dry run
// adds no column: it leaves new ones out, as 'ignore' does. Columns added
// are added after the merge's lock, and target is described again; returns
// whether the lock was taken.
bool settle_merge_source(pg::SpiSession& spi, pg::Relation& target, SourceShape& src, const MergeOptions& options)
{
    if (options.columns)
        return false;
    const OnSchemaChange mode = options.dry_run && options.on_schema_change == OnSchemaChange::kAppendNewColumns
                                    ? OnSchemaChange::kIgnore
                                    : options.on_schema_change;
    const std::vector<pg::Column> added = settle_source_columns(
        src, target, options.exclude_columns, mode,
        {"idem.merge", "Every source column is written unless columns is given", options.delete_column});
    if (added.empty())
        return false;
    lock_target(spi, target, options);
    add_target_columns(spi, target, added, "idem.merge");
    target = describe_target(target.oid);
    return true;
}

}  // namespace

void merge(const pg::ResultSet& out, std::uint32_t target_oid, const MergeSource& source, const MergeOptions& options)
{
    const RunClock clock;
    pg::SpiSession spi;
    pg::Relation target = describe_target(target_oid);
    SourceShape src = describe_source(source, "idem.merge");

    const auto indexes = pg::unique_indexes(target_oid);
    const std::vector<std::string> key =
        resolve_key(target, options.key, indexes, "idem.merge",
                    "Pass key => ARRAY['column', ...] naming the columns of a unique index.");
    for (const auto& k : key)
        if (find_column(src.columns, k) == nullptr)
            throw UserError(sqlstate::kUndefinedColumn, "key column \"" + k + "\" is missing from the source", {},
                            "Select every key column in the source, or name in key the columns the source has.");
    const CitusTable citus = citus_table(spi, target_oid);
    check_citus_write(spi, citus, target.display, key, "idem.merge", options.dry_run);
    require_unique_index(target, key, indexes);
    check_version_columns(options.version_columns, src, target, key);
    if (options.delete_column)
        check_delete_column(*options.delete_column, src, options, key);
    const std::set<std::string> excluded = check_exclude_columns(options, key);
    const bool locked = settle_merge_source(spi, target, src, options);

    core::MergeSpec spec = plan_merge(target, src, options, key, citus, excluded);
    if (!options.dry_run && !locked)
        lock_target(spi, target, options);
    const std::optional<pg::Param> prune_values = prune_to_batch(spi, spec, target, src.params, options);
    // The statement's own $1 is the target: the caller's $n become $(n + 1).
    if (!src.params.empty())
        spec.source_sql = pg::shift_params(spec.source_sql, 1);

    const pg::QueryResult counts = run_merge(spi, spec, target, src.params, prune_values);
    if (!options.dry_run)
        record_merge(spi, clock, target, src, counts);
    pg::return_text_rows(out, counts.rows);
    spi.finish();
}

}  // namespace pg_idempotent
