#include "snapshot/snapshot.hpp"

#include <algorithm>

#include "common/citus_tables.hpp"
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
#include "snapshot/snapshot_sql.hpp"

namespace pg_idempotent {

namespace {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

pg::Relation describe_target(std::uint32_t target_oid)
{
    return describe_table_target(target_oid, "idem.snapshot keeps its history in a table or a partitioned table.");
}

bool contains(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}

void require_key(const std::vector<std::string>& key)
{
    if (key.empty())
        throw UserError(sqlstate::kInvalidParameterValue, "key must name at least one column", {},
                        "Pass key => ARRAY['customer_id'], the business key of the rows the history keeps.");
}

// What marks a current version: valid_to IS NULL, or valid_to = a value
// (valid_to_current, as the validity column's type).
struct CurrentMark {
    const pg::Column* valid_to;
    std::optional<std::string> value;
};

CurrentMark current_mark(const pg::Relation& target, const std::string& valid_to,
                         const std::optional<std::string>& value)
{
    require_target_column(target, valid_to, "valid_to");
    return {find_column(target.columns, valid_to), value};
}

// The predicate of the index, as SQL to create it.
std::string current_predicate(const CurrentMark& m)
{
    const std::string vt = pg::quote_ident(m.valid_to->name);
    if (!m.value)
        return vt + " IS NULL";
    return vt + " OPERATOR(pg_catalog.=) CAST(" + pg::quote_literal(*m.value) + " AS " + m.valid_to->qualified_type +
           ")";
}

// The same predicate as pg_get_expr shows it (in this session's DateStyle
// and TimeZone, as the value's text is), to recognise the index.
std::string shown_predicate(pg::SpiSession& spi, const CurrentMark& m)
{
    const std::string vt = pg::quote_ident(m.valid_to->name);
    if (!m.value)
        return "(" + vt + " IS NULL)";
    const pg::QueryResult r = spi.query(
        "SELECT pg_catalog.quote_literal(CAST($1::pg_catalog.text AS " + m.valid_to->qualified_type +
            ")::pg_catalog.text) OPERATOR(pg_catalog.||) '::' OPERATOR(pg_catalog.||) pg_catalog.format_type($2, NULL)",
        {pg::Param::of_text(*m.value), pg::Param::of_oid(m.valid_to->type_oid)});
    return "(" + vt + " = " + r.rows.at(0).at(0).value_or("") + ")";
}

// The index that allows one current version per key, by name; nullopt when
// the target has none (a valid, immediate unique index on exactly the key
// columns, without expressions, whose predicate is the current mark).
std::optional<std::string> current_version_index(pg::SpiSession& spi, std::uint32_t target,
                                                 std::vector<std::string> key, const CurrentMark& mark)
{
    std::sort(key.begin(), key.end());
    const pg::QueryResult r = spi.query(
        "SELECT i.indexrelid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_index i"
        " WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisunique AND i.indisvalid AND i.indimmediate"
        " AND i.indexprs IS NULL AND i.indnkeyatts OPERATOR(pg_catalog.=) pg_catalog.cardinality($2::pg_catalog.text[])"
        " AND ARRAY(SELECT a.attname::pg_catalog.text COLLATE \"C\" FROM pg_catalog.unnest(i.indkey::pg_catalog.int2[])"
        "  WITH ORDINALITY AS k(attnum, n) JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid"
        "  AND a.attnum OPERATOR(pg_catalog.=) k.attnum WHERE k.n OPERATOR(pg_catalog.<=) i.indnkeyatts ORDER BY 1)"
        "  OPERATOR(pg_catalog.=) $2::pg_catalog.text[]"
        " AND pg_catalog.pg_get_expr(i.indpred, i.indrelid) OPERATOR(pg_catalog.=) $3 ORDER BY 1 LIMIT 1",
        {pg::Param::of_oid(target), pg::Param::of_text_array(key), pg::Param::of_text(shown_predicate(spi, mark))});
    if (r.rows.empty())
        return std::nullopt;
    return r.rows[0][0];
}

// A one-current-version index of the target under another convention than
// the call's (valid_to IS NULL against valid_to = a value, or another
// value): its name and predicate. A call that forgets valid_to_current (or
// passes another) must not get a second index: with two, every key can have
// two current versions.
struct OtherConvention {
    std::string index;
    std::string predicate;  // as pg_get_expr shows it
};

std::optional<OtherConvention> other_convention_index(pg::SpiSession& spi, std::uint32_t target,
                                                      std::vector<std::string> key, const CurrentMark& mark)
{
    std::sort(key.begin(), key.end());
    const std::string vt = pg::quote_ident(mark.valid_to->name);
    const pg::QueryResult r = spi.query(
        "SELECT i.indexrelid::pg_catalog.regclass::pg_catalog.text, pg_catalog.pg_get_expr(i.indpred, i.indrelid)"
        " FROM pg_catalog.pg_index i"
        " WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisunique AND i.indexprs IS NULL AND i.indpred IS NOT NULL"
        " AND i.indnkeyatts OPERATOR(pg_catalog.=) pg_catalog.cardinality($2::pg_catalog.text[])"
        " AND ARRAY(SELECT a.attname::pg_catalog.text COLLATE \"C\" FROM pg_catalog.unnest(i.indkey::pg_catalog.int2[])"
        "  WITH ORDINALITY AS k(attnum, n) JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid"
        "  AND a.attnum OPERATOR(pg_catalog.=) k.attnum WHERE k.n OPERATOR(pg_catalog.<=) i.indnkeyatts ORDER BY 1)"
        "  OPERATOR(pg_catalog.=) $2::pg_catalog.text[]"
        " AND pg_catalog.pg_get_expr(i.indpred, i.indrelid) OPERATOR(pg_catalog.<>) $3"
        " AND pg_catalog.starts_with(pg_catalog.pg_get_expr(i.indpred, i.indrelid), $4) ORDER BY 1 LIMIT 1",
        {pg::Param::of_oid(target), pg::Param::of_text_array(key), pg::Param::of_text(shown_predicate(spi, mark)),
         pg::Param::of_text("(" + vt + " ")});
    if (r.rows.empty())
        return std::nullopt;
    return OtherConvention{r.rows[0][0].value_or(""), r.rows[0][1].value_or("")};
}

// What the call must pass to use that index: "valid_to_current => '<v>'"
// for a predicate (<vt> = '<v>'::type), or leaving the option out for IS NULL.
std::string option_for(const OtherConvention& other)
{
    const std::string& p = other.predicate;
    if (p.size() > 9 && p.compare(p.size() - 9, 9, " IS NULL)") == 0)
        return "leave valid_to_current out (its current versions have valid_to NULL)";
    const std::size_t open = p.find("= '");
    const std::size_t close = p.rfind("'::");
    if (open == std::string::npos || close == std::string::npos || close <= open + 2)
        return "pass the valid_to_current that makes the predicate " + p;
    std::string value;
    for (std::size_t i = open + 3; i < close; ++i) {
        value += p[i];
        if (p[i] == '\'' && i + 1 < close && p[i + 1] == '\'')
            ++i;  // '' in a literal is one quote
    }
    return "pass valid_to_current => " + pg::quote_literal(value);
}

// valid_from and valid_to: columns of the target of one timestamp type,
// never written by the source.
std::string validity_type(const pg::Relation& target, const SourceShape& src, const SnapshotOptions& o)
{
    std::string type;
    for (const std::string& name : {o.valid_from, o.valid_to}) {
        require_target_column(target, name, name == o.valid_from ? "valid_from" : "valid_to");
        const pg::Column* c = find_column(target.columns, name);
        if (!pg::is_timestamp_type(c->type_oid))
            throw UserError(sqlstate::kDatatypeMismatch,
                            "validity column \"" + name + "\" has type " + c->type_name + ", not a timestamp", {},
                            "Make valid_from and valid_to timestamptz (or timestamp) columns.");
        if (!type.empty() && type != c->qualified_type)
            throw UserError(sqlstate::kDatatypeMismatch, "valid_from and valid_to have different types", {},
                            "Give them one type, timestamptz.");
        type = c->qualified_type;
        if (find_column(src.columns, name) != nullptr)
            throw UserError(sqlstate::kDuplicateColumn, "the source has a column \"" + name + "\"",
                            "It is a validity column of \"" + target.display + "\", which idem.snapshot writes.",
                            "Leave it out of the source, or name other validity columns.");
    }
    if (o.valid_from == o.valid_to)
        throw UserError(sqlstate::kInvalidParameterValue, "valid_from and valid_to must be two columns", {},
                        "Name two different columns as valid_from and valid_to.");
    return type;
}

// columns and exclude_columns never name a key column.
void refuse_key_column(const SnapshotOptions& o, const std::string& c)
{
    if (contains(o.key, c))
        throw UserError(sqlstate::kInvalidParameterValue, "key column \"" + c + "\" cannot be compared",
                        "A version belongs to its key; the key never changes within it.",
                        "Leave the key columns out of columns and exclude_columns.");
}

// The data columns a version is compared on: columns, or all but the key,
// exclude_columns (and the validity columns, which the source lacks).
std::vector<core::AssignmentTarget> compare_columns(const pg::Relation& target, const core::SnapshotSpec& spec,
                                                    const SnapshotOptions& o)
{
    if (o.columns && o.exclude_columns)
        throw UserError(sqlstate::kInvalidParameterValue, "columns and exclude_columns cannot both be given", {},
                        "Name the compared columns, or the ones left out, not both.");
    std::vector<std::string> named;
    for (const auto& c : o.columns ? *o.columns : o.exclude_columns.value_or(std::vector<std::string>{})) {
        // exclude_columns may name staging columns the target lacks, left
        // out of the batch before (schema_drift.hpp).
        if (!o.columns && find_column(target.columns, c) == nullptr)
            continue;
        require_target_column(target, c, o.columns ? "columns" : "exclude_columns");
        named.push_back(pg::quote_ident(c));
    }
    std::vector<core::AssignmentTarget> cols;
    for (const auto& c : spec.insert_columns) {
        bool is_key = false;
        for (const auto& k : spec.keys)
            is_key = is_key || k.name == c.name;
        const bool listed = contains(named, c.name);
        if (!is_key && (o.columns ? listed : !listed))
            cols.push_back(c);
    }
    if (o.columns && cols.size() != named.size())
        throw UserError(sqlstate::kUndefinedColumn, "a column of columns is missing from the source", {},
                        "Every compared column must be in the source.");
    return cols;
}

// One column of the timestamp strategy's order: in the target and the
// source, not a key, named once; its type's btree operators.
void plan_updated_at_column(const pg::Relation& target, const SnapshotOptions& o, const std::string& name,
                            core::SnapshotSpec& spec)
{
    require_target_column(target, name, "updated_at");
    if (spec.updated_at.has(pg::quote_ident(name)))
        throw UserError(sqlstate::kDuplicateColumn, "updated_at column \"" + name + "\" is named more than once", {},
                        "Name each column once: the first decides, the next breaks its ties.");
    const core::AssignmentTarget* found = nullptr;
    for (const auto& c : spec.insert_columns)
        if (c.name == pg::quote_ident(name))
            found = &c;
    if (found == nullptr)
        throw UserError(sqlstate::kUndefinedColumn, "updated_at column \"" + name + "\" is missing from the source", {},
                        "Select the updated_at column in the source.");
    if (contains(o.key, name))
        throw UserError(sqlstate::kInvalidParameterValue, "updated_at cannot be a key column", {},
                        "Pass a column that grows with each change, such as updated_at, that is not part of the key.");
    spec.updated_at.columns.push_back(*found);
    if (spec.updated_at.lt.empty()) {
        const pg::Column* c = find_column(target.columns, name);
        spec.updated_at.lt = pg::btree_operator(c->type_oid, 1, name);
        spec.updated_at.eq = pg::btree_operator(c->type_oid, 3, name);
    }
}

void plan_updated_at(const pg::Relation& target, const SnapshotOptions& o, core::SnapshotSpec& spec)
{
    if (o.strategy == "check") {
        if (!o.updated_at.empty())
            throw UserError(sqlstate::kInvalidParameterValue, "updated_at is for the timestamp strategy", {},
                            "Pass strategy => 'timestamp' with it, or leave it out.");
        return;
    }
    if (o.strategy != "timestamp")
        throw UserError(sqlstate::kInvalidParameterValue, "strategy must be 'check' or 'timestamp'",
                        "It is '" + o.strategy + "'.",
                        "'check' opens a version when a compared column changes; 'timestamp' when updated_at grows.");
    if (o.updated_at.empty())
        throw UserError(sqlstate::kNullValueNotAllowed, "the timestamp strategy needs updated_at", {},
                        "Pass updated_at => 'the column whose larger value means a newer row'.");
    for (const auto& name : o.updated_at)
        plan_updated_at_column(target, o, name, spec);
    // Several compare as rows, each by its type's default ordering: one
    // without is refused here, as btree_operator refuses the first.
    for (std::size_t i = 1; i < o.updated_at.size(); ++i) {
        const pg::Column* c = find_column(target.columns, o.updated_at[i]);
        (void)pg::btree_operator(c->type_oid, 1, o.updated_at[i]);
    }
}

// new_record's marker: a boolean column of the target the source lacks.
std::string deleted_column(const pg::Relation& target, const SourceShape& src, const SnapshotOptions& o)
{
    require_target_column(target, o.deleted_column, "deleted_column");
    const pg::Column* c = find_column(target.columns, o.deleted_column);
    if (c->type_name != "boolean")
        throw UserError(sqlstate::kDatatypeMismatch,
                        "deleted_column \"" + o.deleted_column + "\" has type " + c->type_name + ", not boolean", {},
                        "Make it a boolean column: true marks the version that records a deletion.");
    if (find_column(src.columns, o.deleted_column) != nullptr)
        throw UserError(sqlstate::kDuplicateColumn, "the source has a column \"" + o.deleted_column + "\"",
                        "It is the deleted marker of \"" + target.display + "\", which idem.snapshot writes.",
                        "Leave it out of the source, or name another deleted_column.");
    return pg::quote_ident(o.deleted_column);
}

std::string key_literals(const std::vector<std::string>& key)
{
    std::vector<std::string> quoted;
    for (const auto& k : key)
        quoted.push_back(pg::quote_literal(k));
    return core::join(quoted);
}

core::SnapshotSpec plan_snapshot(pg::SpiSession& spi, const pg::Relation& target, const SourceShape& src,
                                 const SnapshotOptions& o)
{
    core::SnapshotSpec spec;
    spec.target = target.qualified;
    spec.source_sql = src.sql;
    spec.validity_type = validity_type(target, src, o);
    spec.valid_from = pg::quote_ident(o.valid_from);
    spec.valid_to = pg::quote_ident(o.valid_to);
    InsertColumnRules rules;
    rules.function = "idem.snapshot";
    // Drifted columns were settled before (schema_drift.hpp).
    rules.extra_detail = "Every source column is kept in the history.";
    rules.extra_hint = "Pass exclude_columns or on_schema_change.";
    rules.identity_hint = "Leave the column out of the source.";
    spec.insert_columns = insert_columns(src, target, rules);
    for (const auto& k : o.key) {
        if (find_column(src.columns, k) == nullptr)
            throw UserError(sqlstate::kUndefinedColumn, "key column \"" + k + "\" is missing from the source", {},
                            "Select every key column in the source.");
        const pg::Column* tc = find_column(target.columns, k);
        spec.keys.push_back(pg::assignment_target(*tc));
        spec.key_eq.push_back(pg::btree_operator(tc->type_oid, 3, k));
    }
    plan_updated_at(target, o, spec);
    spec.compare_columns = compare_columns(target, spec, o);
    if (o.hard_deletes != "ignore" && o.hard_deletes != "invalidate" && o.hard_deletes != "new_record")
        throw UserError(sqlstate::kInvalidParameterValue, "hard_deletes must be 'ignore', 'invalidate' or 'new_record'",
                        "It is '" + o.hard_deletes + "'.",
                        "'ignore' keeps the current version of a key the source lacks; 'invalidate' closes it; "
                        "'new_record' closes it and opens a version marked deleted.");
    spec.invalidate = o.hard_deletes != "ignore";
    if (o.hard_deletes == "new_record")
        spec.deleted_column = deleted_column(target, src, o);
    spec.refuse_empty = spec.invalidate && !o.allow_empty;
    spec.check_nulls = !source_unique_on_key(src, o.key, target);
    spec.check_duplicates = spec.check_nulls;
    if (spec.check_duplicates)
        spec.hash_keys = keys_hashable(target, o.key);
    spec.pairwise_images = compares_images_pairwise(false);  // Citus targets are refused
    spec.stable_source = src.stable();
    spec.current_value = o.valid_to_current.has_value();
    const CurrentMark mark = current_mark(target, o.valid_to, o.valid_to_current);
    using M = core::SnapshotSpec::OtherMark;
    spec.other_mark = mark.value ? M::kNull : pg::is_timestamp_type(mark.valid_to->type_oid) ? M::kFarFuture : M::kNone;
    const bool own = current_version_index(spi, target.oid, o.key, mark).has_value();
    // Another convention's index, beside this call's or instead of it: the
    // history may hold versions current under it, which this call would not
    // see, and it would give their keys a second current version.
    if (const auto other = other_convention_index(spi, target.oid, o.key, mark))
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "\"" + target.display + "\" marks its current versions otherwise than this call",
                        "Its index " + other->index + " allows one current version per key WHERE " + other->predicate +
                            "; this call reads current versions as " + current_predicate(mark) + ".",
                        own ? "The history has an index for each convention: drop the one it does not use."
                            : "Call idem.snapshot as the history was prepared: " + option_for(*other) +
                                  ". A second index would let every key have two current versions.");
    if (!own)
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "\"" + target.display + "\" has no unique index allowing one current version per key",
                        "Without it two runs at once could leave a key with two current versions.",
                        "Create it once: SELECT idem.snapshot_prepare(" + pg::quote_literal(target.display) +
                            ", ARRAY[" + key_literals(o.key) + "], valid_to => " + pg::quote_literal(o.valid_to) +
                            (o.valid_to_current ? ", valid_to_current => " + pg::quote_literal(*o.valid_to_current)
                                                : std::string()) +
                            ");");
    return spec;
}

// Snapshots of one target take turns (READ COMMITTED takes the statement's
// snapshot after the lock, so each sees the versions the one before it
// wrote). Readers and other writers are not blocked.
void lock_target(const pg::Relation& target)
{
    using P = pg::TablePrivilege;
    pg::require_table_privileges(target.oid, {P::kSelect, P::kInsert, P::kUpdate}, "idem.snapshot");
    pg::lock_unit(pg::UnitLockSpace::kSnapshotTarget, target.oid, pg::UnitLockMode::kExclusive);
}

// A history partitioned on a key column (core/partition_prune.hpp): the
// batch's values of it, after the statement's own $1 to $3 and the
// caller's parameters; nullopt: not pruned.
std::optional<pg::Param> prune_to_batch(pg::SpiSession& spi, core::SnapshotSpec& spec, const pg::Relation& target,
                                        const pg::QueryParams& caller)
{
    const std::optional<pg::Column> column = single_partition_column(target);
    if (!column || spec.invalidate)
        return std::nullopt;
    const std::string quoted = pg::quote_ident(column->name);
    for (std::size_t i = 0; i < spec.keys.size(); ++i) {
        if (spec.keys[i].name != quoted)
            continue;
        core::PartitionPrune prune{spec.keys[i], spec.key_eq[i], false, static_cast<int>(caller.values.size()) + 4,
                                   sqlstate::kPruneMissed};
        std::optional<pg::Param> values = read_batch_values(spi, spec.source_sql, prune, column->type_oid, caller);
        if (values)
            spec.prune = prune;
        return values;
    }
    return std::nullopt;
}

std::vector<std::int64_t> snapshot_statement(pg::SpiSession& spi, const core::SnapshotSpec& spec,
                                             const pg::Relation& target, const pg::Params& params)
{
    pg::QueryResult r;
    const pg::Step step("writing the versions of the history");
    // Without JIT: merge.cpp says why.
    pg::with_settings({{"jit", "off"}}, [&] { r = spi.query(core::build_snapshot_sql(spec), params, true); });
    std::vector<std::int64_t> n;
    for (const auto& v : r.rows.at(0))
        n.push_back(std::stoll(v.value_or("0")));
    // inserted, changed, deleted, unchanged, stale, closed, opened. A
    // version closed or opened by someone else meanwhile (not an idem
    // snapshot: those take turns) shows as a count that does not add up.
    const std::int64_t markers = spec.deleted_column ? n[2] : 0;
    if (n[5] != n[1] + n[2] || n[6] != n[0] + n[1] + markers)
        throw UserError(sqlstate::kSerializationFailure,
                        "a concurrent writer changed current versions of \"" + target.display + "\"",
                        std::to_string(n[5]) + " versions closed and " + std::to_string(n[6]) +
                            " opened, where the plan had " + std::to_string(n[1] + n[2]) + " and " +
                            std::to_string(n[0] + n[1] + markers) + ".",
                        "Retry the transaction; write the history only through idem.snapshot.");
    n.resize(5);
    return n;
}

// The statement, pruned when it can be; a batch that turned out to have
// rows outside the values read first is rolled back and run again unpruned.
std::vector<std::int64_t> run_snapshot(pg::SpiSession& spi, core::SnapshotSpec& spec, const pg::Relation& target,
                                       const SnapshotOptions& o, const pg::QueryParams& caller,
                                       const std::optional<pg::Param>& pruned)
{
    pg::Params params = pg::with_caller_params(
        {pg::Param::of_oid(target.oid), pg::Param::of_value(o.as_of), pg::Param::of_text(o.valid_to_current)}, caller);
    if (!spec.prune || !pruned)
        return snapshot_statement(spi, spec, target, params);
    std::vector<std::int64_t> n;
    params.push_back(*pruned);
    const auto failed = pg::try_in_subtransaction([&] { n = snapshot_statement(spi, spec, target, params); });
    if (!failed)
        return n;
    if (pg::error_sqlstate(*failed) != sqlstate::kPruneMissed)
        throw *failed;
    spec.prune.reset();
    params.pop_back();
    return snapshot_statement(spi, spec, target, params);
}

void record_snapshot(pg::SpiSession& spi, const RunClock& clock, const pg::Relation& target, const SourceShape& src,
                     const std::vector<std::int64_t>& n, bool markers)
{
    RunRecord run;
    run.function = src.relation ? "snapshot" : "snapshot_query";
    run.target = target.display;
    if (src.relation)
        run.unit = src.relation->display;
    run.counts = {{"inserted", n[0]}, {"changed", n[1]}, {"deleted", n[2]}, {"unchanged", n[3]}, {"stale", n[4]}};
    run.rows_written = n[0] + 2 * n[1] + (markers ? 2 : 1) * n[2];
    run.changed = run.rows_written > 0;
    run.action = run.changed ? "snapshotted" : "unchanged";
    run.params = src.params.history_json;
    record_run(spi, clock, run);
}

}  // namespace

void snapshot(const pg::ResultSet& out, std::uint32_t target_oid, const BatchSource& source,
              const SnapshotOptions& options)
{
    const RunClock clock;
    pg::SpiSession spi;
    require_key(options.key);
    pg::Relation target = describe_target(target_oid);
    SourceShape src = describe_source(source, "idem.snapshot");
    if (citus_table(spi, target_oid).kind != CitusKind::kNone)
        throw UserError(sqlstate::kFeatureNotSupported,
                        "idem.snapshot does not write Citus distributed or reference tables yet",
                        "\"" + target.display + "\" is one.", "Keep the history in a local table.");
    for (const auto& c :
         options.columns ? *options.columns : options.exclude_columns.value_or(std::vector<std::string>{}))
        refuse_key_column(options, c);
    // With columns given, the source's other columns are still kept in the
    // history: they drift like any other.
    const std::vector<pg::Column> added =
        settle_source_columns(src, target, options.exclude_columns, options.on_schema_change,
                              {"idem.snapshot", "Every source column is kept in the history", std::nullopt});
    if (!added.empty()) {  // after the snapshot's lock, as every snapshot of the history waits for it
        lock_target(target);
        add_target_columns(spi, target, added, "idem.snapshot");
        target = describe_target(target_oid);
    }
    core::SnapshotSpec spec = plan_snapshot(spi, target, src, options);
    if (added.empty())
        lock_target(target);
    const std::optional<pg::Param> pruned = prune_to_batch(spi, spec, target, src.params);
    if (!src.params.empty())  // after the statement's own $1 to $3
        spec.source_sql = pg::shift_params(spec.source_sql, 3);
    const std::vector<std::int64_t> n = run_snapshot(spi, spec, target, options, src.params, pruned);
    record_snapshot(spi, clock, target, src, n, spec.deleted_column.has_value());
    pg::Row row;
    for (auto v : n)
        row.push_back(std::to_string(v));
    pg::return_text_rows(out, {row});
    spi.finish();
}

// A unique index on a partitioned table must contain the partition key: a
// history partitioned by time cannot have one on the key alone.
void require_key_holds_partition_key(pg::SpiSession& spi, const pg::Relation& target,
                                     const std::vector<std::string>& key)
{
    if (target.kind != 'p')
        return;
    const pg::QueryResult r = spi.query(
        "SELECT a.attname::pg_catalog.text FROM pg_catalog.pg_partitioned_table p"
        " CROSS JOIN pg_catalog.unnest(p.partattrs::pg_catalog.int2[]) AS k(attnum)"
        " JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid"
        "  AND a.attnum OPERATOR(pg_catalog.=) k.attnum"
        " WHERE p.partrelid OPERATOR(pg_catalog.=) $1 AND NOT (a.attname::pg_catalog.text OPERATOR(pg_catalog.=) ANY "
        "($2::pg_catalog.text[])) ORDER BY 1",
        {pg::Param::of_oid(target.oid), pg::Param::of_text_array(key)});
    if (!r.rows.empty())
        throw UserError(sqlstate::kFeatureNotSupported,
                        "\"" + target.display + "\" is partitioned on \"" + r.rows[0][0].value_or("") +
                            "\", which is not in the key",
                        "A unique index on a partitioned table must contain its partition key, so one current "
                        "version per key cannot be enforced across partitions.",
                        "Partition the history by the key (PARTITION BY HASH (key)), or keep it in one table.");
}

// Versions the table holds under another convention than mark's (once,
// before the index is made: a scan is fine there). Marked by a value, a
// version with valid_to NULL is current under IS NULL; marked by IS NULL, a
// valid_to of 'infinity' or from the year 9999 on is a "current" marker
// (dbt's dbt_valid_to_current), not a real end.
void require_rows_of_convention(pg::SpiSession& spi, const pg::Relation& target, const CurrentMark& mark)
{
    const std::string vt = pg::quote_ident(mark.valid_to->name);
    // The year-9999 test needs a timestamp column (what idem.snapshot keeps).
    if (!mark.value && !pg::is_timestamp_type(mark.valid_to->type_oid))
        return;
    const std::string found =
        mark.value
            ? spi.query("SELECT 'NULL' FROM " + target.qualified + " WHERE " + vt + " IS NULL LIMIT 1").rows.empty()
                  ? std::string()
                  : std::string("NULL")
            : spi.query("SELECT pg_catalog.max(" + vt + ")::pg_catalog.text FROM " + target.qualified + " WHERE " + vt +
                        " OPERATOR(pg_catalog.>=) CAST('9999-01-01' AS " + mark.valid_to->qualified_type + ")")
                  .rows.at(0)
                  .at(0)
                  .value_or("");
    if (found.empty())
        return;
    throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                    "\"" + target.display + "\" holds versions current under another convention",
                    "Some versions have " + mark.valid_to->name + " " + (mark.value ? "NULL" : "= " + found) +
                        ", which marks them current; this call would mark current versions as " +
                        current_predicate(mark) + ", and every such key would get a second current version.",
                    mark.value ? "Leave valid_to_current out (current versions have valid_to NULL), or close "
                                 "those versions first."
                               : "Pass valid_to_current => " + pg::quote_literal(found) +
                                     ", the value that marks the current versions.");
}

std::string snapshot_prepare(std::uint32_t target_oid, const std::vector<std::string>& key, const std::string& valid_to,
                             const std::optional<std::string>& valid_to_current)
{
    pg::SpiSession spi;
    require_key(key);
    const pg::Relation target = describe_target(target_oid);
    std::vector<std::string> cols;
    for (const auto& k : key) {
        require_target_column(target, k, "key");
        cols.push_back(pg::quote_ident(k));
    }
    const CurrentMark mark = current_mark(target, valid_to, valid_to_current);
    require_key_holds_partition_key(spi, target, key);
    // The privileges idem.snapshot needs, before the lock: a role with none
    // on the history table must not hold its lock (0.8.0 locked first and
    // returned early when the index existed).
    using P = pg::TablePrivilege;
    pg::require_table_privileges(target.oid, {P::kSelect, P::kInsert, P::kUpdate}, "idem.snapshot_prepare");
    pg::lock_unit(pg::UnitLockSpace::kSnapshotTarget, target.oid, pg::UnitLockMode::kExclusive);
    std::optional<std::string> name = current_version_index(spi, target.oid, key, mark);
    if (!name) {
        if (const auto other = other_convention_index(spi, target.oid, key, mark))
            throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                            "\"" + target.display + "\" already allows one current version per key otherwise",
                            "Its index " + other->index + " is WHERE " + other->predicate + "; a second one, WHERE " +
                                current_predicate(mark) + ", would let every key have two current versions.",
                            "Prepare (and snapshot) the history as it is marked: " + option_for(*other) +
                                "; or drop that index first, if the history changes its convention.");
        require_rows_of_convention(spi, target, mark);
        const std::string current = current_predicate(mark);
        const pg::QueryResult twice =
            spi.query("SELECT " + core::join(cols) + " FROM " + target.qualified + " WHERE " + current + " GROUP BY " +
                      core::join(cols) + " HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1 LIMIT 1");
        if (!twice.rows.empty()) {
            std::vector<std::string> values;
            for (const auto& x : twice.rows[0])
                values.push_back(x.value_or("NULL"));
            throw UserError(
                sqlstate::kUniqueViolation, "\"" + target.display + "\" has keys with more than one current version",
                "For example key (" + core::join(cols) + ")=(" + core::join(values) + ").",
                "Close all but one current version of each key (set " + valid_to + "), then prepare again.");
        }
        spi.query("CREATE UNIQUE INDEX ON " + target.qualified + " (" + core::join(cols) + ") WHERE " + current);
        name = current_version_index(spi, target.oid, key, mark);
    }
    spi.finish();
    return name.value_or("");
}

}  // namespace pg_idempotent
