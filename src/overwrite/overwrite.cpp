#include "overwrite/overwrite.hpp"

#include <functional>
#include <memory>

#include "common/citus_tables.hpp"
#include "common/installed_sql.hpp"
#include "common/run_history.hpp"
#include "core/assignment.hpp"
#include "core/digest.hpp"
#include "core/row_image.hpp"
#include "core/row_sample.hpp"
#include "core/sql_text.hpp"
#include "overwrite/new_partition.hpp"
#include "overwrite/partitions.hpp"
#include "overwrite/storage_swap.hpp"
#include "overwrite/swap_losses.hpp"
#include "overwrite/swap_partition.hpp"
#include "overwrite/written_units.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/partition_lookup.hpp"
#include "pg/roles.hpp"
#include "pg/spi.hpp"
#include "pg/transactions.hpp"
#include "pg/values.hpp"
#include "pg_native/statement_digest.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// The query's rows as the target would store them: its columns mapped by
// position onto the target's (as INSERT INTO t SELECT does) and cast to
// their types, named as the target's columns so a predicate over the
// target's columns can be evaluated on them.
struct ConvertedQuery {
    std::string query;               // the caller's, as given
    pg::QueryParams params;          // its $1, $2, ..., for every statement that embeds it
    std::vector<std::string> casts;  // q.cN as INSERT converts it (core::cast_to_target), one per writable column
    std::vector<std::string> names;  // the writable columns, quoted
    // The query's column types ("type:typmod;" each), when every cast is
    // immutable (equal query rows give equal cast rows); else "".
    std::string preimage_shape;

    std::string rows() const
    {
        std::vector<std::string> named;
        for (std::size_t i = 0; i < casts.size(); ++i)
            named.push_back(casts[i] + " AS " + names[i]);
        return "SELECT " + core::join(named) + " FROM (" + query + "\n) AS q (" +
               core::join(core::positional_columns(casts.size())) + ")";
    }
};

// preimage: whether to work out preimage_shape (only overwrite_partition keeps
// a record).
ConvertedQuery convert_query(const pg::Relation& target, const std::string& query, const pg::QueryParams& params,
                             bool preimage)
{
    std::vector<pg::Column> writable;
    for (const auto& c : target.columns)
        if (c.generated == '\0')
            writable.push_back(c);
    pg::require_bound(query, params, "the query");
    const auto cols = pg::describe_query(query, params.values);
    if (cols.size() != writable.size())
        throw UserError(
            sqlstate::kDatatypeMismatch,
            "the query returns " + std::to_string(cols.size()) + " columns and \"" + target.display + "\" has " +
                std::to_string(writable.size()),
            "Columns map by position, as in INSERT INTO t SELECT ...; every (non-generated) column needs a value.",
            "Select one column per column of the target that can be written, in its order.");
    ConvertedQuery converted;
    converted.query = query;
    converted.params = params;
    bool immutable = true;
    for (std::size_t i = 0; i < cols.size(); ++i) {
        if (!pg::can_assign(cols[i].type_oid, writable[i].type_oid))
            throw UserError(sqlstate::kDatatypeMismatch,
                            "column " + std::to_string(i + 1) + " of the query is " + cols[i].type_name + " and \"" +
                                writable[i].name + "\" is " + writable[i].type_name,
                            {}, "Cast the column in the query.");
        // As INSERT converts it (an assignment): a value too long for
        // varchar(n) raises 22001, where CAST would cut it.
        converted.casts.push_back(
            core::cast_to_target("q.c" + std::to_string(i + 1), pg::assignment_target(writable[i])));
        converted.names.push_back(pg::quote_ident(writable[i].name));
        immutable =
            immutable && preimage &&
            pg::conversion_is_immutable(cols[i].type_oid, cols[i].typmod, writable[i].type_oid, writable[i].typmod);
        converted.preimage_shape += std::to_string(cols[i].type_oid) + ":" + std::to_string(cols[i].typmod) + ";";
    }
    if (!immutable || cols.empty())
        converted.preimage_shape.clear();
    return converted;
}

// SELECT <the non-generated columns, in the target's order> FROM rel: the
// stored side of the "same rows" comparison, shaped like converted_rows.
std::string stored_rows(const pg::Relation& shape, const std::string& qualified_relation)
{
    std::vector<std::string> names;
    for (const auto& c : shape.columns)
        if (c.generated == '\0')
            names.push_back(pg::quote_ident(c.name));
    return core::select_columns(names, qualified_relation);
}

std::string insert_columns(const pg::Relation& target)
{
    std::vector<std::string> names;
    for (const auto& c : target.columns)
        if (c.generated == '\0')
            names.push_back(pg::quote_ident(c.name));
    return core::join(names);
}

// The v1 digest text of the rows of sql, a SELECT shaped like the target's
// writable columns (ConvertedQuery::rows, stored_rows); params: the
// caller's, when sql embeds the caller's SQL.
std::string rows_digest(pg::SpiSession& spi, const pg::Relation& shape, const std::string& sql,
                        const pg::Params& params = {})
{
    std::size_t columns = 0;
    for (const auto& c : shape.columns)
        if (c.generated == '\0')
            ++columns;
    return pg::digest_select_text(spi, sql, columns, sql_has(SqlFeature::kDigestAggregate), params);
}

// The digest of the query's rows as the target would store them (compared
// with the unit's) and, when the casts are immutable, of the rows as the
// query returned them (kept in the record if they are written): both from
// one pass over the query, so they describe the same rows.
struct IncomingRows {
    std::string cast;                       // digest of ConvertedQuery::rows()
    std::optional<QueryPreimage> preimage;  // the query's own rows
};

IncomingRows incoming_rows(pg::SpiSession& spi, const pg::Relation& shape, const ConvertedQuery& converted)
{
    IncomingRows in;
    if (converted.preimage_shape.empty()) {
        in.cast = rows_digest(spi, shape, converted.rows(), converted.params.values);
        return in;
    }
    if (records_query_samples() && converted.casts.size() <= core::kMaxCallArguments) {
        // Two aggregates, so PostgreSQL may share the pass among parallel
        // workers: "<digest> <sample>" of the query's rows, and the digest of
        // their casts.
        auto r =
            spi.query(core::sampled_digest_and_digest_sql(converted.query, converted.casts.size(), converted.casts),
                      converted.params.values);
        const std::string sampled = r.rows.at(0).at(0).value_or("");
        const std::size_t space = sampled.find(' ');
        in.preimage = QueryPreimage{converted.preimage_shape, sampled.substr(0, space),
                                    space == std::string::npos ? "" : sampled.substr(space + 1)};
        in.cast = r.rows.at(0).at(1).value_or("");
        return in;
    }
    // SQL objects older than the module (before ALTER EXTENSION ... UPDATE),
    // or more columns than an aggregate call takes: no sample to keep. The
    // query's columns and their casts side by side, hashed as two rows.
    const auto hasher = std::make_unique<core::RowHasher>();
    core::MultisetDigest raw;
    core::MultisetDigest cast;
    pg::DigestTargets targets;
    targets.hasher = hasher.get();
    targets.digest = &raw;
    targets.split = static_cast<int>(converted.casts.size());
    targets.second = &cast;
    pg::digest_statement_rows_into(spi,
                                   core::columns_beside_sql(converted.query, converted.casts.size(), converted.casts),
                                   targets, converted.params.values);
    in.preimage = QueryPreimage{converted.preimage_shape, raw.text(), ""};
    in.cast = cast.text();
    return in;
}

// Whether the query returns the very rows whose digest the record's preimage
// keeps. The query is read until the first row that proves otherwise: one
// more row than the preimage has, or a row its sample excludes. When every
// row changed, that is within the first few hundred rows, so a write after a
// change reads the whole query twice (to cast and hash it, then to insert
// it), not three times.
bool returns_preimage(pg::SpiSession& spi, const ConvertedQuery& converted, const QueryPreimage& preimage)
{
    const auto hasher = std::make_unique<core::RowHasher>();
    const std::optional<core::RowSample> sample =
        preimage.sample.empty() ? std::nullopt : core::RowSample::parse(preimage.sample, core::kRerunCheckModulus);
    core::MultisetDigest digest;
    bool stopped = false;
    pg::DigestTargets targets;
    targets.hasher = hasher.get();
    targets.digest = &digest;
    targets.check = sample ? &*sample : nullptr;
    targets.max_rows = core::digest_text_count(preimage.digest);
    targets.stopped = &stopped;
    pg::digest_statement_rows_into(spi, core::columns_beside_sql(converted.query, converted.casts.size()), targets,
                                   converted.params.values);
    return !stopped && digest.text() == preimage.digest;
}

// The preimage to record for rows stored with digest written: only when
// they are the cast rows whose preimage was hashed.
std::optional<QueryPreimage> preimage_of(const std::string& written, const IncomingRows& in)
{
    return written == in.cast ? in.preimage : std::nullopt;
}

// Whether a foreign key references rel (or, for a partition, one of its
// ancestors): then the old rows must go and the new ones come in one
// statement, so that the key (NO ACTION) is checked once the rows with the
// same keys are back.
bool referenced_by_foreign_keys(pg::SpiSession& spi, std::uint32_t rel)
{
    auto r = spi.query(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint c"
        " WHERE c.contype OPERATOR(pg_catalog.=) 'f' AND c.confrelid OPERATOR(pg_catalog.=) ANY ("
        "  SELECT a.relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors($1::pg_catalog.regclass) a"
        "  UNION ALL SELECT $1))::pg_catalog.text",
        {Param::of_oid(rel)});
    return r.rows.at(0).at(0).value_or("true") == "true";
}

// Thrown inside the subtransaction of a two-statement replacement whose
// INSERT stored other rows than the comparison saw: the subtransaction is
// rolled back and the replacement done again as one statement.
struct QueryChangedUnderfoot {};

std::int64_t count_of(pg::SpiSession& spi, const std::string& sql, const pg::Params& params)
{
    auto r = spi.query("SELECT pg_catalog.count(*)::pg_catalog.text FROM (" + sql + ") AS c", params);
    return std::stoll(r.rows.at(0).at(0).value_or("0"));
}

// The partition whose bound holds the value, if one does; default_takes_it
// says whether the DEFAULT partition would. Found in the parent's partition
// bounds (partition_lookup.hpp): nothing per partition, none of the others
// locked.
// The OID of the partition whose bound holds the value. Only the parent is
// locked (partition_lookup.hpp), not the partition.
std::optional<std::uint32_t> partition_oid_holding(pg::SpiSession& spi, const pg::Relation& parent,
                                                   std::uint32_t key_type, const Param& key_param,
                                                   bool& default_takes_it)
{
    // The value crosses as canonical text (ISO, UTC): a session's own
    // DateStyle may write a zone abbreviation that reads back as another zone.
    pg::QueryResult shown;
    pg::with_canonical_settings(
        [&] { shown = spi.query("SELECT $1::" + pg::type_qualified(key_type) + "::pg_catalog.text", {key_param}); });
    const std::optional<std::string>& text = shown.rows.at(0).at(0);
    const pg::TypedValue value = text ? pg::parse_canonical(*text, key_type) : pg::TypedValue{0, key_type, true};
    const pg::PartitionForValue found = pg::partition_for_value(parent.oid, value);
    default_takes_it = found.default_takes_it;
    return found.partition;
}

// The partition described, which locks it (ACCESS SHARE).
std::optional<Partition> partition_holding(pg::SpiSession& spi, const pg::Relation& parent, std::uint32_t key_type,
                                           const Param& key_param, bool& default_takes_it)
{
    const auto oid = partition_oid_holding(spi, parent, key_type, key_param, default_takes_it);
    if (!oid)
        return std::nullopt;
    auto part = describe_partition(spi, *oid);
    if (!part)
        throw UserError(sqlstate::kUndefinedTable, "partition with OID " + std::to_string(*oid) + " does not exist", {},
                        "It was dropped while overwrite_partition looked for it: run the call again.");
    return part;
}

// What an INSERT ... RETURNING stored: the digest of its rows and, when it
// returned them after the columns (xmin, cmin), their stamp.
struct Inserted {
    core::MultisetDigest digest;
    std::optional<RowStamp> stamp;
};

Inserted digest_inserted(pg::SpiSession& spi, const std::string& insert, const pg::Params& params, bool with_stamp)
{
    const auto hasher = std::make_unique<core::RowHasher>();
    Inserted out;
    std::uint32_t tail[2] = {0, 0};
    bool got = false;
    pg::DigestTargets targets;
    targets.hasher = hasher.get();
    targets.digest = &out.digest;
    if (with_stamp) {
        targets.tail = 2;
        targets.first_row_tail = tail;
        targets.got_first_row = &got;
    }
    pg::digest_statement_rows_into(spi, insert, targets, params);
    if (got)
        out.stamp = RowStamp{tail[0], tail[1]};
    return out;
}

// The two ways to replace a unit's rows, tried in order. `two_statements`
// (a DELETE and then an INSERT, allowed when no foreign key references the
// rows) throws QueryChangedUnderfoot when its INSERT stored other rows than
// the comparison saw (the query read the unit, is volatile, or a source
// changed meanwhile): it is rolled back, and `one_statement` (WITH ... DELETE
// ... INSERT: the query sees the rows as they were, and referencing foreign
// keys are checked once the rows with the same keys are back) runs instead.
// Each runs in a subtransaction; the PostgreSQL error that rolled it back is
// returned, for the caller to explain.
std::optional<pg::PgError> delete_then_insert(bool two_statements_allowed, const std::function<void()>& two_statements,
                                              const std::function<void()>& one_statement)
{
    if (two_statements_allowed) {
        try {
            return pg::try_in_subtransaction(two_statements);
        } catch (const QueryChangedUnderfoot&) {
            // rolled back; once more, as one statement
        }
    }
    return pg::try_in_subtransaction(one_statement);
}

// Mode 'rewrite': the partition's rows replaced by the query's in place
// (delete_then_insert). The one statement's INSERT reads the DELETE's count
// first (a one-time filter), so the old rows are gone before the first new
// one meets a unique index; it keeps the deleted rows in its CTE's
// tuplestore, which is why two statements are tried first. Either way the
// RETURNING digest is of the rows as stored (after any BEFORE trigger),
// which the record of the partition keeps for the next rerun.
std::uint64_t rewrite_in_place(pg::SpiSession& spi, const pg::Relation& parent, const Partition& part,
                               const ConvertedQuery& converted, const IncomingRows& in)
{
    const std::string rows = converted.rows();
    const pg::Params& params = converted.params.values;
    const std::string& expected = in.cast;
    const std::string insert = "INSERT INTO " + part.rel.qualified + " (" + insert_columns(parent) + ") ";
    // The rows' stamp comes back with them, for the record: reading it from
    // the partition afterwards would scan past every row just deleted.
    const bool with_stamp = may_read_stamps(spi, part.rel);
    const std::string returning = " RETURNING " + insert_columns(parent) + (with_stamp ? ", xmin, cmin" : "");
    Inserted written;
    const auto failed = delete_then_insert(
        !referenced_by_foreign_keys(spi, part.rel.oid),
        [&] {
            spi.execute("DELETE FROM " + part.rel.qualified);
            written = digest_inserted(spi, insert + rows + returning, params, with_stamp);
            if (written.digest.text() != expected)
                throw QueryChangedUnderfoot{};
        },
        [&] {
            written = digest_inserted(spi,
                                      "WITH idem_deleted AS (DELETE FROM " + part.rel.qualified + " RETURNING 1) " +
                                          insert + "SELECT * FROM (" + rows +
                                          ") AS r WHERE (SELECT pg_catalog.count(*)"
                                          " FROM idem_deleted) OPERATOR(pg_catalog.>=) 0" +
                                          returning,
                                      params, with_stamp);
        });
    if (failed) {
        if (pg::error_sqlstate(*failed) != sqlstate::kCheckViolation)
            throw *failed;
        throw_rows_outside(spi, part, rows, params, "the query", *failed);
    }
    record_written_unit(spi, part.rel, unit_shape(parent, part.rel), written.digest.text(),
                        preimage_of(written.digest.text(), in), written.stamp);
    return written.digest.count();
}

// Mode 'swap': a staging table loaded with the rows, then swapped in. Its
// indexes are built after the load (by the swap). Usually the staging table
// is laid out as the partition is and becomes its storage (storage_swap.hpp):
// nothing is detached, nothing but the partition locked. When the swap
// detaches (swap_detaches) it is shaped like the partition (same columns,
// NOT NULLs, defaults, generated columns, storage, tablespace, persistence)
// and takes the partition's place in the partitioned table
// (swap_partition.hpp).
std::uint64_t load_and_swap(pg::SpiSession& spi, const pg::Relation& parent, const Partition& part,
                            const ConvertedQuery& converted, const IncomingRows& in, bool detaches, bool keep_old,
                            const std::optional<std::string>& lock_timeout, bool accept_losses)
{
    if (detaches)
        refuse_swap_losses(spi, part, accept_losses);
    else {
        check_ownership(spi, {part.rel.oid});
        check_not_referenced(spi, part, false);
    }
    const std::string staging_name = core::identifier_with_suffix(part.rel.name, "__idem_staging");
    const std::string staging = pg::quote_ident(part.rel.schema) + "." + pg::quote_ident(staging_name);
    auto ts = spi.query(
        "SELECT COALESCE((SELECT ' TABLESPACE ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(t.spcname)"
        " FROM pg_catalog.pg_tablespace t WHERE t.oid OPERATOR(pg_catalog.=) c.reltablespace), '')"
        " FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(part.rel.oid)});
    const std::string tablespace = ts.rows.at(0).at(0).value_or("");
    std::uint32_t staging_oid = 0;
    if (detaches)
        spi.execute(std::string("CREATE ") + (part.persistence == 'u' ? "UNLOGGED " : "") + "TABLE " + staging +
                    " (LIKE " + part.rel.qualified +
                    " INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION)" + tablespace);
    else
        staging_oid = create_storage_staging(spi, part, staging, tablespace);
    const core::MultisetDigest written =
        pg::digest_statement_rows(spi,
                                  "INSERT INTO " + staging + " (" + insert_columns(parent) + ") " + converted.rows() +
                                      " RETURNING " + insert_columns(parent),
                                  converted.params.values);
    if (!detaches) {
        swap_storage_into(spi, part, staging_oid, lock_timeout, "the query");
        record_written_unit(spi, part.rel, unit_shape(parent, part.rel), written.text(),
                            preimage_of(written.text(), in));
        return written.count();
    }
    auto oid = spi.query("SELECT $1::pg_catalog.regclass::pg_catalog.oid::pg_catalog.text", {Param::of_text(staging)});
    staging_oid = static_cast<std::uint32_t>(std::stoul(oid.rows.at(0).at(0).value_or("0")));
    swap_into(spi, part, staging_oid, keep_old, lock_timeout, "the query");
    // The staging table is the partition now, under its name.
    const pg::Relation swapped = pg::describe_relation(staging_oid);
    record_written_unit(spi, swapped, unit_shape(parent, swapped), written.text(), preimage_of(written.text(), in));
    return written.count();
}

// The result row of replace_where or overwrite_partition, recorded in the
// run history and returned to the caller.
void finish_run(const pg::ResultSet& out, pg::SpiSession& spi, const RunClock& clock, const RunRecord& run,
                const pg::Row& result)
{
    record_run(spi, clock, run);
    pg::return_text_rows(out, {result});
    spi.finish();
}

// How many rows differed between the unit before and after a write that
// compared only their digests: known when one side is empty (every row of
// the other), else NULL.
std::optional<std::string> differing_when_known(std::int64_t before, std::int64_t after)
{
    if (before == 0 || after == 0)
        return std::to_string(before + after);
    return std::nullopt;
}

pg::Relation describe_table(std::uint32_t oid)
{
    pg::Relation target = pg::describe_relation(oid);
    if (target.kind != 'r' && target.kind != 'p')
        throw UserError(sqlstate::kWrongObjectType, "\"" + target.display + "\" is not a table", {},
                        "Replace rows of a table or a partitioned table.");
    return target;
}

// Every new row must belong to the unit it replaces.
void require_rows_in_unit(pg::SpiSession& spi, const pg::Relation& target, const ConvertedQuery& converted,
                          const std::string& predicate)
{
    const std::string rows_named = "SELECT * FROM (" + converted.rows() + ") AS " + pg::quote_ident(target.name);
    const std::int64_t outside =
        count_of(spi, rows_named + " WHERE NOT COALESCE((" + predicate + "\n), false)", converted.params.values);
    if (outside > 0)
        throw UserError(
            sqlstate::kCheckViolation,
            std::to_string(outside) + " rows of the query do not satisfy the predicate of \"" + target.display + "\"",
            "The predicate was: " + predicate,
            "Every inserted row must belong to the unit of work it replaces; nothing was changed.");
}

// replace_where's write (delete_then_insert): how many rows went and came.
std::pair<std::int64_t, std::int64_t> replace_unit(pg::SpiSession& spi, const pg::Relation& target,
                                                   const std::string& predicate, const ConvertedQuery& converted,
                                                   const std::string& incoming)
{
    const std::string rows = converted.rows();
    const pg::Params& params = converted.params.values;
    const std::string where = " WHERE (" + predicate + "\n)";
    const std::string insert = "INSERT INTO " + target.qualified + " (" + insert_columns(target) + ") " + rows;
    std::int64_t deleted = 0;
    std::int64_t inserted = 0;
    const auto failed = delete_then_insert(
        !referenced_by_foreign_keys(spi, target.oid),
        [&] {
            deleted = static_cast<std::int64_t>(spi.execute("DELETE FROM " + target.qualified + where, params));
            const core::MultisetDigest written =
                pg::digest_statement_rows(spi, insert + " RETURNING " + insert_columns(target), params);
            if (written.text() != incoming)
                throw QueryChangedUnderfoot{};
            inserted = static_cast<std::int64_t>(written.count());
        },
        [&] {
            const pg::QueryResult both =
                spi.query("WITH idem_deleted AS (DELETE FROM " + target.qualified + where +
                              " RETURNING 1), idem_inserted AS (" + insert +
                              " RETURNING 1) SELECT (SELECT pg_catalog.count(*) FROM idem_deleted), (SELECT"
                              " pg_catalog.count(*) FROM idem_inserted)",
                          params);
            deleted = std::stoll(both.rows.at(0).at(0).value_or("0"));
            inserted = std::stoll(both.rows.at(0).at(1).value_or("0"));
        });
    if (failed)
        throw *failed;
    return {deleted, inserted};
}

// The partition key of overwrite_partition: one plain column (multi-column
// keys go through swap_partition).
struct PartitionKey {
    std::string column;
    std::uint32_t type = 0;
};

PartitionKey partition_key(pg::SpiSession& spi, const pg::Relation& parent)
{
    auto key = spi.query(
        "SELECT pt.partnatts::pg_catalog.text, a.attname::pg_catalog.text,"
        " a.atttypid::pg_catalog.text"
        " FROM pg_catalog.pg_partitioned_table pt"
        " LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) pt.partrelid"
        "  AND a.attnum OPERATOR(pg_catalog.=) pt.partattrs[0]"
        " WHERE pt.partrelid OPERATOR(pg_catalog.=) $1",
        {Param::of_oid(parent.oid)});
    const auto& krow = key.rows.at(0);
    if (krow[0] != std::optional<std::string>("1") || !krow[1])
        throw UserError(sqlstate::kFeatureNotSupported, "overwrite_partition needs a partition key of one column",
                        "\"" + parent.display + "\" is partitioned on several columns or an expression.",
                        "Build the partition yourself and use idem.swap_partition.");
    return {*krow[1], static_cast<std::uint32_t>(std::stoul(krow[2].value_or("0")))};
}

// The value as a parameter of the key's type (the text overload casts, as
// the caller would).
Param key_value_param(const PartitionKey& key, const pg::TypedValue& value,
                      const std::optional<std::string>& value_text)
{
    if (value_text)
        return Param::of_text(*value_text);
    if (value.is_null)
        throw UserError(sqlstate::kNullValueNotAllowed, "value must not be NULL", {},
                        "Pass the partition key value of the partition to overwrite.");
    if (value.type != key.type && !pg::can_assign(value.type, key.type))
        throw UserError(sqlstate::kDatatypeMismatch,
                        "value is " + pg::type_display(value.type) + " and the partition key \"" + key.column +
                            "\" is " + pg::type_display(key.type),
                        {}, "Cast the value to the partition key's type, or pass it as text.");
    return Param::of_value(value);
}

// The partition whose bound holds the value, if any. A concurrent swap that
// commits while we read drops the partition we are looking at (42P01): look
// again, with a snapshot that sees the new one.
std::optional<Partition> look_for_partition(pg::SpiSession& spi, const pg::Relation& parent, const PartitionKey& key,
                                            const Param& key_param, bool& default_takes_it)
{
    for (int attempt = 1;; ++attempt) {
        try {
            return partition_holding(spi, parent, key.type, key_param, default_takes_it);
        } catch (const UserError& e) {
            if (std::string(e.code()) != sqlstate::kUndefinedTable || attempt == 3)
                throw;
        }
    }
}

// 23514: no partition holds the value; the HINT gives the statement that
// would create the one it needs (new_partition.hpp), when one can be worked
// out.
UserError no_partition(pg::SpiSession& spi, const pg::Relation& parent, const PartitionKey& key, const Param& key_param,
                       bool default_takes_it, const std::string& why_not_created)
{
    auto shown = spi.query("SELECT $1::" + pg::type_qualified(key.type) + "::pg_catalog.text", {key_param});
    const PartitionProposal proposal = propose_partition(spi, parent, key.type, key_param);
    const std::string first = "Create the partition first, with CREATE TABLE ... PARTITION OF " + parent.qualified;
    const std::string hint =
        proposal.partition ? "Create it: " + proposal.partition->create_sql + "; or pass create_partition => true."
        : why_not_created.empty() ? first + " (create_partition cannot: " + proposal.why_not + ")."
                                  : first + ".";
    return UserError(sqlstate::kCheckViolation,
                     "no partition of \"" + parent.display + "\" holds " + key.column + " = " +
                         shown.rows.at(0).at(0).value_or("NULL") +
                         (default_takes_it ? " (only the DEFAULT partition would take it)" : ""),
                     why_not_created, hint);
}

// The partition whose bound holds the value; with create, one made for it
// when none does (after the creators' lock, looking again: another job may
// have made it meanwhile).
Partition find_partition(pg::SpiSession& spi, const pg::Relation& parent, const PartitionKey& key,
                         const Param& key_param, bool create, const std::optional<std::string>& lock_timeout,
                         bool& created)
{
    bool default_takes_it = false;
    if (auto found = look_for_partition(spi, parent, key, key_param, default_takes_it))
        return std::move(*found);
    if (!create)
        throw no_partition(spi, parent, key, key_param, default_takes_it, {});
    lock_partition_creation(spi, parent.oid, lock_timeout, "\"" + parent.display + "\"");
    if (auto found = look_for_partition(spi, parent, key, key_param, default_takes_it))
        return std::move(*found);
    const PartitionProposal proposal = propose_partition(spi, parent, key.type, key_param);
    if (!proposal.partition)
        throw no_partition(spi, parent, key, key_param, default_takes_it,
                           "create_partition cannot make one: " + proposal.why_not + ".");
    create_partition(spi, parent, key.column, key.type, *proposal.partition);
    created = true;
    if (auto found = look_for_partition(spi, parent, key, key_param, default_takes_it))
        return std::move(*found);
    throw UserError(sqlstate::kInternalError, "the partition just created does not hold the value",
                    proposal.partition->create_sql,
                    "A bug in pg_idempotent: report it with the statement that raised it.");
}

// schema.name of a partition read without locking it (dropped meanwhile: the
// parent's partition).
std::string unlocked_name(std::uint32_t oid, const pg::Relation& parent)
{
    try {
        return pg::describe_relation(oid, pg::RelationLock::kNone).display;
    } catch (const UserError& e) {
        if (std::string(e.code()) != sqlstate::kUndefinedTable)
            throw;
        return "partition of " + parent.display;
    }
}

// The partition, found again once its own lock is held, because a
// concurrent swap may have replaced it meanwhile. Nothing locks the
// partition itself before its unit lock is held: a swap holding that lock
// waits for ACCESS EXCLUSIVE on the partition, and a reader's lock on it
// held while waiting for the unit lock would deadlock with it.
Partition lock_partition_to_overwrite(pg::SpiSession& spi, const pg::Relation& parent, const PartitionKey& key,
                                      const Param& key_param, const OverwriteOptions& options, bool& created)
{
    bool default_takes_it = false;
    std::optional<std::uint32_t> oid = partition_oid_holding(spi, parent, key.type, key_param, default_takes_it);
    if (!oid)  // missing: made here (create_partition), or the error that says so
        oid = find_partition(spi, parent, key, key_param, options.create_partition, options.lock_timeout, created)
                  .rel.oid;
    lock_partition_unit(spi, *oid, options.lock_timeout, "partition \"" + unlocked_name(*oid, parent) + "\"");
    bool again = false;
    Partition part = find_partition(spi, parent, key, key_param, false, options.lock_timeout, again);
    if (part.partitioned)
        throw UserError(sqlstate::kFeatureNotSupported, "partition \"" + part.rel.display + "\" is itself partitioned",
                        {}, "Overwrite its own partitions.");
    return part;
}

// Whether a swap detaches the old partition and attaches the staging table
// instead of replacing the partition's storage: to keep the old one as a
// table (keep_old), and in a Citus table, whose rows live in shards (or, for
// a Citus local table, in a shard on this node) that a swap of the
// coordinator's storage would not touch; ATTACH has Citus move the rows.
// Decided from the parent, before any lock: the lock the swap takes first
// depends on it.
bool swap_detaches(pg::SpiSession& spi, std::uint32_t parent_oid, bool keep_old)
{
    return keep_old || citus_table(spi, parent_oid).kind != CitusKind::kNone;
}

// The checks and the lock before overwrite_partition reads any partition:
// the caller's privileges, ownership for a swap, then the first lock
// (partitions.hpp), held alone by a swap that detaches (swap_detaches).
pg::Relation lock_parent_to_overwrite(pg::SpiSession& spi, std::uint32_t parent_oid, bool swap, bool detaches,
                                      const std::optional<std::string>& lock_timeout)
{
    const pg::Relation parent = pg::describe_relation(parent_oid, pg::RelationLock::kNone);  // unit lock first
    if (parent.kind != 'p')
        throw UserError(sqlstate::kWrongObjectType, "\"" + parent.display + "\" is not a partitioned table", {},
                        "For a table that is not partitioned, use idem.replace_where.");
    pg::require_table_privileges(
        parent_oid, {pg::TablePrivilege::kSelect, pg::TablePrivilege::kInsert, pg::TablePrivilege::kDelete},
        "overwrite_partition");
    if (detaches)
        require_sql(SqlFeature::kSwapCarryFunctions,
                    "overwrite_partition in mode 'swap' that detaches the partition (keep_old, or a Citus table)");
    if (swap)
        check_ownership(spi, {parent_oid});
    lock_partitioned_table_unit(spi, parent_oid, detaches, lock_timeout, "\"" + parent.display + "\"");
    return parent;
}

// The digest of the partition's rows when the query returns the same rows
// (nothing to write), else nullopt with `now` and `incoming` filled for the
// write. The partition's digest comes from the record of what this function
// last wrote there, when the rows prove untouched since; else by hashing
// them. When the query returns the very rows whose casts the partition holds
// there is no cast to compute (written_units.hpp); when they differ, the
// query is read once more to hash its rows cast: a write after a change pays
// that pass, which spares every identical rerun the casts.
std::optional<std::string> unchanged_digest(pg::SpiSession& spi, const pg::Relation& parent, const Partition& part,
                                            const ConvertedQuery& converted, std::string& now,
                                            std::optional<IncomingRows>& incoming)
{
    const std::optional<WrittenUnit> record = witnessed_unit(spi, part.rel, unit_shape(parent, part.rel));
    if (record && record->preimage && !converted.preimage_shape.empty() &&
        record->preimage->shape == converted.preimage_shape && returns_preimage(spi, converted, *record->preimage))
        return record->digest;
    if (!record) {
        // Rows this function did not write (loaded by hand): both sides are
        // hashed, the query's rows cast only. An identical rerun, which
        // writes no record and so comes back to this, hashes each row
        // once (the query's own rows and their sample, which a write records,
        // cost one more hash a row: 1.79x the query and a scan at 1M rows,
        // against 1.6x); a changed one reads the query again for them below.
        // An empty partition (a first write) skips that pass: its query
        // is read twice, as with a record.
        now = rows_digest(spi, parent, stored_rows(parent, part.rel.qualified));
        if (core::digest_text_count(now) > 0 &&
            rows_digest(spi, parent, converted.rows(), converted.params.values) == now)
            return now;
    } else {
        now = record->digest;
    }
    incoming = incoming_rows(spi, parent, converted);
    if (now == incoming->cast)
        return now;
    return std::nullopt;
}

}  // namespace

void replace_where(const pg::ResultSet& out, std::uint32_t target_oid, const std::string& predicate,
                   const std::string& query, const std::optional<std::string>& lock_timeout,
                   const pg::QueryParams& params)
{
    if (predicate.find_first_not_of(" \t\r\n") == std::string::npos)
        throw UserError(sqlstate::kInvalidParameterValue, "predicate must not be empty", {},
                        "Pass the condition that selects the unit of work, e.g. day = '2024-07-07'.");
    pg::require_bound(predicate, params, "the predicate");
    pg::require_bound(query, params, "the query");
    const RunClock clock;
    pg::SpiSession spi;
    const pg::Relation target = describe_table(target_oid);
    // The caller's privileges before anything else (the lock below is held
    // to the end of the transaction).
    pg::require_table_privileges(
        target_oid, {pg::TablePrivilege::kSelect, pg::TablePrivilege::kInsert, pg::TablePrivilege::kDelete},
        "replace_where");
    // Serialize overwrites of this table: a concurrent rerun waits, then sees
    // the first one's rows and finds nothing to change.
    lock_table_unit(spi, target_oid, lock_timeout, "\"" + target.display + "\"");

    const ConvertedQuery converted = convert_query(target, query, params, false);
    require_rows_in_unit(spi, target, converted, predicate);
    RunRecord run;
    run.function = "replace_where";
    run.target = target.display;
    run.unit = predicate;
    run.params = params.history_json;
    // The same rows (as stored) already there: write nothing at all.
    const std::string incoming = rows_digest(spi, target, converted.rows(), params.values);
    const std::string unit = stored_rows(target, target.qualified) + " WHERE (" + predicate + "\n)";
    if (rows_digest(spi, target, unit, params.values) == incoming) {
        const std::string n = std::to_string(core::digest_text_count(incoming));
        run.action = "skipped";
        run.counts = {{"deleted", 0}, {"inserted", 0}};
        run.rows_written = 0;
        finish_run(out, spi, clock, run, {std::string("0"), std::string("0"), run.action, n, n, std::string("0")});
        return;
    }
    const auto [deleted, inserted] = replace_unit(spi, target, predicate, converted, incoming);
    run.action = "replaced";
    run.counts = {{"deleted", deleted}, {"inserted", inserted}};
    run.rows_written = deleted + inserted;
    run.changed = true;
    finish_run(out, spi, clock, run,
               {std::to_string(deleted), std::to_string(inserted), run.action, std::to_string(deleted),
                std::to_string(inserted), differing_when_known(deleted, inserted)});
}

void overwrite_partition(const pg::ResultSet& out, std::uint32_t parent_oid, const pg::TypedValue& value,
                         const std::optional<std::string>& value_text, const std::string& query,
                         const OverwriteOptions& options)
{
    if (options.mode != "rewrite" && options.mode != "swap")
        throw UserError(sqlstate::kInvalidParameterValue,
                        "mode must be 'rewrite' or 'swap', not '" + options.mode + "'", {},
                        "Pass mode => 'rewrite' (in place) or mode => 'swap' (a new table swapped in).");
    const bool swap = options.mode == "swap";
    const RunClock clock;
    pg::SpiSession spi;
    const bool detaches = swap && swap_detaches(spi, parent_oid, options.keep_old);
    const pg::Relation parent = lock_parent_to_overwrite(spi, parent_oid, swap, detaches, options.lock_timeout);
    const PartitionKey key = partition_key(spi, parent);
    const Param key_param = key_value_param(key, value, value_text);
    bool created = false;
    const Partition part = lock_partition_to_overwrite(spi, parent, key, key_param, options, created);

    RunRecord run;
    run.function = "overwrite_partition";
    run.target = parent.display;
    run.unit = part.rel.display;
    run.params = options.params.history_json;
    if (created) {  // a change, whatever the rows
        run.counts.emplace_back("partition_created", 1);
        run.changed = true;
    }
    // The same rows already there: nothing is written at all (no staging
    // table, no lock on the parent).
    const ConvertedQuery converted = convert_query(parent, query, options.params, true);
    std::string now;
    std::optional<IncomingRows> incoming;
    if (const auto same = unchanged_digest(spi, parent, part, converted, now, incoming)) {
        const std::string n = std::to_string(core::digest_text_count(*same));
        run.action = "skipped";
        run.counts.emplace_back("unchanged", std::stoll(n));
        run.rows_written = 0;
        finish_run(out, spi, clock, run, {run.action, n, n, n, std::string("0")});
        return;
    }
    const auto written =
        static_cast<std::int64_t>(swap ? load_and_swap(spi, parent, part, converted, *incoming, detaches,
                                                       options.keep_old, options.lock_timeout, options.accept_losses)
                                       : rewrite_in_place(spi, parent, part, converted, *incoming));
    // The old rows went with them (deleted in place, or with the old table).
    const auto replaced = static_cast<std::int64_t>(core::digest_text_count(now));
    run.action = swap ? "swapped" : "rewritten";
    run.counts.emplace_back("replaced", replaced);
    run.counts.emplace_back("inserted", written);
    run.rows_written = replaced + written;
    run.changed = true;
    finish_run(out, spi, clock, run,
               {run.action, std::to_string(written), std::to_string(replaced), std::to_string(written),
                differing_when_known(replaced, written)});
}

}  // namespace pg_idempotent
