#include "append/append.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "append/append_sql.hpp"
#include "common/citus_tables.hpp"
#include "common/conflict_tally.hpp"
#include "common/installed_sql.hpp"
#include "common/partition_prune.hpp"
#include "common/run_history.hpp"
#include "core/sql_text.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/step.hpp"
#include "pg/transactions.hpp"
#include "pg/unit_lock.hpp"

namespace pg_idempotent {

namespace {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

pg::Relation describe_target(std::uint32_t target_oid)
{
    return describe_table_target(target_oid, "idem.append writes into a table or a partitioned table.");
}

bool keep_first(const AppendOptions& options)
{
    if (options.on_conflict == "error")
        return false;
    if (options.on_conflict == "keep_first")
        return true;
    throw UserError(sqlstate::kInvalidParameterValue, "on_conflict must be 'error' or 'keep_first'",
                    "It is '" + options.on_conflict + "'.",
                    "'error' (the default) refuses an event that came back with other content; 'keep_first' keeps "
                    "what is there and counts it.");
}

// exclude_columns: target columns that are not part of "the same event"
// (a received_at), and staging columns the target lacks (left out of the
// batch: schema_drift.hpp, which refuses a name neither side has).
// Returned quoted, as AssignmentTarget names are.
std::set<std::string> excluded_columns(const AppendOptions& options, const std::vector<std::string>& key)
{
    std::set<std::string> quoted;
    if (!options.exclude_columns)
        return quoted;
    for (const auto& c : *options.exclude_columns) {
        if (std::find(key.begin(), key.end(), c) != key.end())
            throw UserError(sqlstate::kInvalidParameterValue, "key column \"" + c + "\" cannot be in exclude_columns",
                            "The key is what makes two events the same one.",
                            "Leave the key columns out of exclude_columns.");
        quoted.insert(pg::quote_ident(c));
    }
    return quoted;
}

// within: the target's partition key, when it is one column of a date or
// timestamp type of a range-partitioned table. 22023 otherwise.
core::AssignmentTarget window_column(pg::SpiSession& spi, const pg::Relation& target, const core::AppendSpec& spec)
{
    const pg::QueryResult r = spi.query(
        "SELECT a.attname::pg_catalog.text, a.atttypid::pg_catalog.regtype::pg_catalog.text FROM "
        "pg_catalog.pg_partitioned_table p JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) "
        "p.partrelid AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0] WHERE p.partrelid OPERATOR(pg_catalog.=) "
        "$1 AND p.partnatts OPERATOR(pg_catalog.=) 1 AND p.partstrat OPERATOR(pg_catalog.=) 'r' AND a.atttypid "
        "OPERATOR(pg_catalog.=) ANY ('{pg_catalog.date,pg_catalog.timestamp,pg_catalog.timestamptz}'::pg_catalog.regtype[])",
        {pg::Param::of_oid(target.oid)});
    if (r.rows.empty())
        throw UserError(sqlstate::kInvalidParameterValue,
                        "within needs a target partitioned by range on one date or timestamp column",
                        "\"" + target.display + "\" is not.",
                        "Leave within out: the whole target is then read for the keys of the batch.");
    const std::string quoted = pg::quote_ident(*r.rows[0][0]);
    for (const auto& c : spec.insert_columns)
        if (c.name == quoted)
            return c;
    throw UserError(sqlstate::kUndefinedColumn,
                    "partition key column \"" + *r.rows[0][0] + "\" is missing from the source",
                    "within reads the target around the batch's own values of it.",
                    "Select the partition key column in the batch, or leave out within.");
}

core::AppendSpec plan_append(pg::SpiSession& spi, const pg::Relation& target, const SourceShape& src,
                             const AppendOptions& options, const std::vector<std::string>& key,
                             const std::vector<pg::UniqueIndex>& indexes)
{
    core::AppendSpec spec;
    spec.target = target.qualified;
    spec.target_literal = pg::quote_literal(target.display);
    spec.source_sql = src.sql;
    spec.keep_first = keep_first(options);
    const std::set<std::string> excluded = excluded_columns(options, key);
    InsertColumnRules rules;
    rules.function = "idem.append";
    // Drifted columns were settled before (schema_drift.hpp).
    rules.extra_detail = "Every source column is written.";
    rules.extra_hint = "Pass exclude_columns or on_schema_change.";
    rules.identity_hint = "Leave the column out of the source.";
    spec.insert_columns = insert_columns(src, target, rules);
    for (const auto& k : key) {
        const pg::Column* tc = find_column(target.columns, k);
        spec.keys.push_back(pg::assignment_target(*tc));
        spec.key_eq.push_back(pg::btree_operator(tc->type_oid, 3, k));
    }
    for (const auto& c : spec.insert_columns) {
        const bool is_key = std::any_of(spec.keys.begin(), spec.keys.end(),
                                        [&](const core::AssignmentTarget& k) { return k.name == c.name; });
        if (!is_key && excluded.count(c.name) == 0)
            spec.compare_columns.push_back(c);
    }
    // A source table unique on the key, NOT NULL, of the target's types can
    // hold neither a NULL key nor a key twice.
    spec.check_nulls = !source_unique_on_key(src, key, target);
    spec.check_duplicates = spec.check_nulls;
    if (spec.check_duplicates)
        spec.hash_keys = keys_hashable(target, key);
    spec.stable_source = src.stable();
    spec.arbiter = has_unique_index_on(key, indexes);
    if (options.within)
        spec.window_column = window_column(spi, target, spec);
    return spec;
}

// Appends into one target take turns: each sees the events the one before
// it committed (READ COMMITTED takes the statement's snapshot after the
// lock). Without a unique index on the key, nothing else would keep two
// appends from writing one event twice; with one, the turns keep the
// content check exact. A snapshot older than the lock (REPEATABLE READ,
// SERIALIZABLE) cannot see what it waited for: with a unique index the
// INSERT then fails with 40001 on such a key; without one that is refused
// up front.
void lock_target(pg::SpiSession& spi, const pg::Relation& target, bool arbiter)
{
    using P = pg::TablePrivilege;
    pg::require_table_privileges(target.oid, {P::kSelect, P::kInsert}, "idem.append");
    // The INSERT's ON CONFLICT ... DO UPDATE counts an event a concurrent
    // writer inserted and never updates it, but PostgreSQL still checks
    // UPDATE: said here, before any lock, in the extension's words.
    if (arbiter)
        pg::require_table_privileges(target.oid, {P::kUpdate},
                                     "idem.append into a table with a unique index on the key (its INSERT ... ON "
                                     "CONFLICT DO UPDATE, which updates no row, counts the events a concurrent "
                                     "writer inserted)");
    if (!arbiter &&
        spi.query("SELECT pg_catalog.current_setting('transaction_isolation')").rows.at(0).at(0) != "read committed")
        throw UserError(sqlstate::kFeatureNotSupported,
                        "idem.append needs READ COMMITTED on a target without a unique index on the key",
                        "At REPEATABLE READ or SERIALIZABLE an append could not see the events of an append that "
                        "committed after its snapshot, and nothing would stop it from writing them again.",
                        "Run the append in a READ COMMITTED transaction, or give \"" + target.display +
                            "\" a unique index on exactly the key (on a partitioned table the key must then include "
                            "the partition key).");
    pg::lock_unit(pg::UnitLockSpace::kAppendTarget, target.oid, pg::UnitLockMode::kExclusive);
}

// Thrown inside the one-INSERT append's subtransaction to roll it back.
struct GiveWay {};

// The statements' parameters: $1 the target, $2 within (NULL when not
// given), then the caller's $n as $(n + 2).
pg::Params statement_params(const pg::Relation& target, const std::optional<std::string>& within,
                            const pg::QueryParams& caller)
{
    return pg::with_caller_params({pg::Param::of_oid(target.oid), pg::Param::of_text(within)}, caller);
}

// Runs one of append's statements and returns its result with the
// conflicts it counted. Without JIT (merge.cpp says why); the one-INSERT
// append looks each key up through the target's unique index, as the
// hand-written INSERT ... ON CONFLICT does: a hash join read and spilled the
// whole target instead (1.4 s against 0.8 s for a 1M-row batch into 1M rows).
pg::QueryResult run_statement(pg::SpiSession& spi, const std::string& sql, const pg::Relation& target,
                              const pg::Params& params, ConflictCounts& met, bool probe)
{
    reset_conflicts(target.oid);
    pg::Settings settings = {{"jit", "off"}};
    if (probe) {
        settings.emplace_back("enable_hashjoin", "off");
        settings.emplace_back("enable_mergejoin", "off");
    }
    pg::QueryResult r;
    const pg::Step step("appending the batch to the target");
    pg::with_settings(settings, [&] { r = spi.query(sql, params, true); });
    met = conflicts(target.oid);
    return r;
}

// The one-INSERT append (append_sql.hpp): counts from the rows it inserted
// and the conflicts it counted, or nothing when it must give way to the
// whole statement (a NULL key, a new key repeated or inserted meanwhile, or
// other content that is an error: the whole statement names the key).
// Rolled back then.
std::optional<std::vector<std::int64_t>> fast_append(pg::SpiSession& spi, const core::AppendSpec& spec,
                                                     const pg::Relation& target, const pg::Params& params)
{
    std::optional<std::vector<std::int64_t>> counts;
    std::optional<pg::PgError> failed;
    try {
        failed = pg::try_in_subtransaction([&] {
            ConflictCounts met;
            // Through the unique index; without one, hash joins over the window.
            const pg::QueryResult r =
                run_statement(spi, core::build_fast_append_sql(spec), target, params, met, spec.arbiter);
            if (met.differ > 0 && !spec.keep_first)
                throw GiveWay{};
            counts = std::vector<std::int64_t>{static_cast<std::int64_t>(r.processed), met.same, met.differ};
        });
    } catch (const GiveWay&) {
        return std::nullopt;  // rolled back
    }
    if (failed) {
        const std::string code = pg::error_sqlstate(*failed);
        if (code != sqlstate::kNotNullViolation && code != sqlstate::kUniqueViolation)
            throw *failed;
    }
    return counts;
}

// The whole statement's counts: inserted, duplicate, conflicting, with the
// conflicts its INSERT met with rows a concurrent writer inserted.
std::vector<std::int64_t> full_append(pg::SpiSession& spi, const core::AppendSpec& spec, const pg::Relation& target,
                                      const pg::Params& params)
{
    ConflictCounts met;
    const pg::QueryResult r = run_statement(spi, core::build_append_sql(spec), target, params, met, false);
    if (met.differ > 0 && !spec.keep_first)
        throw UserError(sqlstate::kAppendConflict, "an event came back with different content",
                        std::to_string(met.differ) + " events of this batch were written to \"" + target.display +
                            "\" by a concurrent transaction with other content.",
                        "An event is written once: find out why it changed upstream, or pass on_conflict => "
                        "'keep_first'.");
    const std::int64_t planned = std::stoll(r.rows.at(0).at(0).value_or("0"));
    return {planned - met.same - met.differ, std::stoll(r.rows.at(0).at(1).value_or("0")) + met.same,
            std::stoll(r.rows.at(0).at(2).value_or("0")) + met.differ};
}

std::vector<std::int64_t> run_append(pg::SpiSession& spi, const core::AppendSpec& spec, const pg::Relation& target,
                                     const pg::Params& params)
{
    if (core::fast_append_applies(spec))
        if (auto counts = fast_append(spi, spec, target, params))
            return *counts;
    return full_append(spi, spec, target, params);
}

// A partitioned target (core/partition_prune.hpp): a key column that is its
// partition key prunes to the batch's values of it; else within's column,
// to the batch's range widened by within. The parameters after the
// statement's own and the caller's; nullopt: not pruned.
std::optional<pg::Params> prune_to_batch(pg::SpiSession& spi, core::AppendSpec& spec, const pg::Relation& target,
                                         const pg::QueryParams& caller, const AppendOptions& options)
{
    const std::optional<pg::Column> column = single_partition_column(target);
    if (!column || spec.citus)
        return std::nullopt;
    const std::string quoted = pg::quote_ident(column->name);
    const int first = static_cast<int>(caller.values.size()) + 3;
    for (std::size_t i = 0; i < spec.keys.size(); ++i) {
        if (spec.keys[i].name != quoted)
            continue;
        core::PartitionPrune prune{spec.keys[i], spec.key_eq[i], false, first, sqlstate::kPruneMissed};
        std::optional<pg::Param> values = read_batch_values(spi, spec.source_sql, prune, column->type_oid, caller);
        if (!values)
            return std::nullopt;
        spec.prune = prune;
        return pg::Params{*values};
    }
    if (!spec.window_column || spec.window_column->name != quoted)
        return std::nullopt;
    core::PartitionPrune prune{*spec.window_column, {}, true, first, sqlstate::kPruneMissed};
    std::optional<pg::Params> window =
        read_batch_window(spi, spec.source_sql, prune, column->type_oid, caller, *options.within);
    if (window)
        spec.prune = prune;
    return window;
}

// Whether the target holds no row the caller can see (of a pruned append,
// in the batch's partitions), under the append's lock.
bool target_is_empty(pg::SpiSession& spi, const core::AppendSpec& spec, const pg::Relation& target,
                     const std::optional<pg::Params>& pruned)
{
    std::string sql = "SELECT (NOT EXISTS (SELECT 1 FROM " + target.qualified + " AS t";
    pg::Params params;
    if (spec.prune && pruned) {
        core::PartitionPrune alone = *spec.prune;
        alone.first = 1;
        sql += " WHERE true" + core::prune_condition(alone, "t");
        params = *pruned;
    }
    return spi.query(sql + "))::pg_catalog.text", params).rows.at(0).at(0) == std::optional<std::string>("true");
}

// run_append, pruned when it can be; a batch that turned out to have rows
// outside what was read first is rolled back and appended again unpruned.
std::vector<std::int64_t> run_pruned(pg::SpiSession& spi, core::AppendSpec& spec, const pg::Relation& target,
                                     const pg::Params& params, const std::optional<pg::Params>& pruned)
{
    if (!spec.prune || !pruned)
        return run_append(spi, spec, target, params);
    pg::Params all = params;
    all.insert(all.end(), pruned->begin(), pruned->end());
    std::vector<std::int64_t> counts;
    const auto failed = pg::try_in_subtransaction([&] { counts = run_append(spi, spec, target, all); });
    if (!failed)
        return counts;
    if (pg::error_sqlstate(*failed) != sqlstate::kPruneMissed)
        throw *failed;
    spec.prune.reset();
    spec.target_empty = false;  // it was of the pruned partitions
    return run_append(spi, spec, target, params);
}

void record_append(pg::SpiSession& spi, const RunClock& clock, const pg::Relation& target, const SourceShape& src,
                   const std::vector<std::int64_t>& counts)
{
    RunRecord run;
    run.function = src.relation ? "append" : "append_query";
    run.target = target.display;
    if (src.relation)
        run.unit = src.relation->display;
    run.counts = {{"inserted", counts[0]}, {"duplicate", counts[1]}, {"conflicting", counts[2]}};
    run.rows_written = counts[0];
    run.changed = counts[0] > 0;
    run.action = run.changed ? "appended" : "unchanged";
    run.params = src.params.history_json;
    record_run(spi, clock, run);
}

}  // namespace

void append(const pg::ResultSet& out, std::uint32_t target_oid, const BatchSource& source, const AppendOptions& options)
{
    const RunClock clock;
    pg::SpiSession spi;
    require_sql(SqlFeature::kConflictTally, "idem.append");
    pg::Relation target = describe_target(target_oid);
    SourceShape src = describe_source(source, "idem.append");
    const auto indexes = pg::unique_indexes(target_oid);
    const std::vector<std::string> key = resolve_key(target, options.key, indexes, "idem.append",
                                                     "Pass key => ARRAY['event_id'] naming the event's own id.");
    for (const auto& k : key)
        if (find_column(src.columns, k) == nullptr)
            throw UserError(
                sqlstate::kUndefinedColumn, "key column \"" + k + "\" is missing from the source", {},
                "Select every key column in the source, or name in key the columns that identify an event.");
    const CitusTable citus = citus_table(spi, target_oid);
    check_citus_write(spi, citus, target.display, key, "idem.append", false);
    (void)excluded_columns(options, key);  // its errors before any other work
    // On Citus the INSERT has no ON CONFLICT: a snapshot older than the
    // lock would meet a waited-for append's events as 23505, so READ
    // COMMITTED only, as without a unique index.
    const bool arbiter = has_unique_index_on(key, indexes) && citus.kind == CitusKind::kNone;
    const std::vector<pg::Column> added =
        settle_source_columns(src, target, options.exclude_columns, options.on_schema_change,
                              {"idem.append", "Every source column is written", std::nullopt});
    if (!added.empty()) {  // after the append's lock, as every append of the target waits for it
        lock_target(spi, target, arbiter);
        add_target_columns(spi, target, added, "idem.append");
        target = describe_target(target_oid);
    }
    core::AppendSpec spec = plan_append(spi, target, src, options, key, indexes);
    spec.citus = citus.kind != CitusKind::kNone;
    spec.pairwise_images = compares_images_pairwise(spec.citus);
    if (added.empty())
        lock_target(spi, target, arbiter);
    const std::optional<pg::Params> pruned = prune_to_batch(spi, spec, target, src.params, options);
    if (core::fast_append_applies(spec))
        spec.target_empty = target_is_empty(spi, spec, target, pruned);
    if (!src.params.empty())  // after the statement's own $1 and $2
        spec.source_sql = pg::shift_params(spec.source_sql, 2);
    const std::vector<std::int64_t> counts =
        run_pruned(spi, spec, target, statement_params(target, options.within, src.params), pruned);
    record_append(spi, clock, target, src, counts);
    pg::return_text_rows(out, {{std::to_string(counts[0]), std::to_string(counts[1]), std::to_string(counts[2])}});
    spi.finish();
}

}  // namespace pg_idempotent
