// PG_MODULE_MAGIC and the extern "C" entry shims: each reads its arguments
// into plain C++ values and calls the feature through cpp_entry, the one
// guard between PostgreSQL's longjmp errors and C++ exceptions.
#include "append/append.hpp"
#include "checkpoints/checkpoints.hpp"
#include "common/conflict_tally.hpp"
#include "common/run_history.hpp"
#include "effects/effects.hpp"
#include "keys/keys.hpp"
#include "merge/merge.hpp"
#include "merge/tombstones.hpp"
#include "overwrite/overwrite.hpp"
#include "overwrite/swap_partition.hpp"
#include "pg/args.hpp"
#include "pg/grant_invalidation.hpp"
#include "pg/grant_trigger.hpp"
#include "pg/guard.hpp"
#include "pg/guard_probe.hpp"
#include "pg/settings.hpp"
#include "pg_native/digest_aggregate.hpp"
#include "pg_native/images_equal.hpp"
#include "pg_native/jsonb_same.hpp"
#include "pg_native/repeat_aggregate.hpp"
#include "pg_native/target_cache_setup.hpp"
#include "proof/assert_rerun_safe.hpp"
#include "proof/checksum.hpp"
#include "publish/hold.hpp"
#include "publish/publish.hpp"
#include "snapshot/snapshot.hpp"

namespace pg = pg_idempotent::pg;

#include <optional>

// Functions that may return SQL NULL: body returns nullopt for NULL.
template <typename F>
static Datum nullable_entry(FunctionCallInfo fcinfo, F&& body)
{
    bool is_null = false;
    Datum d = pg::cpp_entry(fcinfo, [&]() -> Datum {
        std::optional<Datum> r = body();
        is_null = !r.has_value();
        return r.value_or(Datum(0));
    });
    if (is_null)
        PG_RETURN_NULL();
    return d;
}

// PGDLLEXPORT is empty on Linux: keep the entry points visible even when the
// module is built with -fvisibility=hidden.
#pragma GCC visibility push(default)
extern "C" {

PG_MODULE_MAGIC;

void _PG_init(void);
void _PG_init(void)
{
    // Plain PostgreSQL calls only (no C++ object is alive here).
    pg::define_settings();
    pg::register_transaction_callbacks();
    pg::register_grant_invalidation();
    pg::register_target_cache();
    pg::install_statement_hiding();
}

PG_FUNCTION_INFO_V1(idem_checksum);
PG_FUNCTION_INFO_V1(idem_checksum_query);
PG_FUNCTION_INFO_V1(idem_diff);
PG_FUNCTION_INFO_V1(idem__row_digest);
PG_FUNCTION_INFO_V1(idem__digest_agg_add);
PG_FUNCTION_INFO_V1(idem__digest_agg_combine);
PG_FUNCTION_INFO_V1(idem__digest_agg_serialize);
PG_FUNCTION_INFO_V1(idem__digest_agg_deserialize);
PG_FUNCTION_INFO_V1(idem__digest_agg_final);
PG_FUNCTION_INFO_V1(idem__digest_sample_agg_add);
PG_FUNCTION_INFO_V1(idem__digest_sample_agg_combine);
PG_FUNCTION_INFO_V1(idem__digest_sample_agg_serialize);
PG_FUNCTION_INFO_V1(idem__digest_sample_agg_deserialize);
PG_FUNCTION_INFO_V1(idem__digest_sample_agg_final);
PG_FUNCTION_INFO_V1(idem__key_hash);
PG_FUNCTION_INFO_V1(idem__key_repeats);
PG_FUNCTION_INFO_V1(idem__jsonb_same);
PG_FUNCTION_INFO_V1(idem__images_equal);
PG_FUNCTION_INFO_V1(idem__row_hash);
PG_FUNCTION_INFO_V1(idem__repeat_hashes_add);
PG_FUNCTION_INFO_V1(idem__repeat_hashes_final);
PG_FUNCTION_INFO_V1(idem__boundary_probe);
PG_FUNCTION_INFO_V1(idem_merge);
PG_FUNCTION_INFO_V1(idem_merge_query);
PG_FUNCTION_INFO_V1(idem_claim);
PG_FUNCTION_INFO_V1(idem_claim_many);
PG_FUNCTION_INFO_V1(idem_claim_lease);
PG_FUNCTION_INFO_V1(idem__grants_changed);
PG_FUNCTION_INFO_V1(idem_check_lease);
PG_FUNCTION_INFO_V1(idem_complete);
PG_FUNCTION_INFO_V1(idem_save_point);
PG_FUNCTION_INFO_V1(idem_result);
PG_FUNCTION_INFO_V1(idem_once);
PG_FUNCTION_INFO_V1(idem_key_status);
PG_FUNCTION_INFO_V1(idem_forget);
PG_FUNCTION_INFO_V1(idem_purge_keys);
PG_FUNCTION_INFO_V1(idem_record_effect);
PG_FUNCTION_INFO_V1(idem_record_effects);
PG_FUNCTION_INFO_V1(idem_take_effects);
PG_FUNCTION_INFO_V1(idem_renew_effect);
PG_FUNCTION_INFO_V1(idem_effect_done);
PG_FUNCTION_INFO_V1(idem_effects_done);
PG_FUNCTION_INFO_V1(idem_listen_effects);
PG_FUNCTION_INFO_V1(idem_unlisten_effects);
PG_FUNCTION_INFO_V1(idem_effect_failed);
PG_FUNCTION_INFO_V1(idem_effect_uncertain);
PG_FUNCTION_INFO_V1(idem_effect_status);
PG_FUNCTION_INFO_V1(idem_effect_counts);
PG_FUNCTION_INFO_V1(idem_effect_keys);
PG_FUNCTION_INFO_V1(idem_retry_effect);
PG_FUNCTION_INFO_V1(idem_purge_effects);
PG_FUNCTION_INFO_V1(idem_watermark);
PG_FUNCTION_INFO_V1(idem_watermark_typed);
PG_FUNCTION_INFO_V1(idem_lock_job);
PG_FUNCTION_INFO_V1(idem_advance);
PG_FUNCTION_INFO_V1(idem_rewind);
PG_FUNCTION_INFO_V1(idem_run_once);
PG_FUNCTION_INFO_V1(idem_mark_window);
PG_FUNCTION_INFO_V1(idem_windows);
PG_FUNCTION_INFO_V1(idem_gaps);
PG_FUNCTION_INFO_V1(idem_assert_rerun_safe);
PG_FUNCTION_INFO_V1(idem_publish);
PG_FUNCTION_INFO_V1(idem_rollback);
PG_FUNCTION_INFO_V1(idem_hold);
PG_FUNCTION_INFO_V1(idem_release);
PG_FUNCTION_INFO_V1(idem_dataset_status);
PG_FUNCTION_INFO_V1(idem_versions);
PG_FUNCTION_INFO_V1(idem_pin);
PG_FUNCTION_INFO_V1(idem__canonical_text);
PG_FUNCTION_INFO_V1(idem__from_canonical);
PG_FUNCTION_INFO_V1(idem_replace_where);
PG_FUNCTION_INFO_V1(idem_overwrite_partition);
PG_FUNCTION_INFO_V1(idem_overwrite_partition_text);
PG_FUNCTION_INFO_V1(idem_swap_partition);
PG_FUNCTION_INFO_V1(idem_purge_history);
PG_FUNCTION_INFO_V1(idem__tombstones);
PG_FUNCTION_INFO_V1(idem__tombstones_put);
PG_FUNCTION_INFO_V1(idem_purge_tombstones);
PG_FUNCTION_INFO_V1(idem_adopt);
PG_FUNCTION_INFO_V1(idem__count_conflict);
PG_FUNCTION_INFO_V1(idem__raise);
PG_FUNCTION_INFO_V1(idem_append);
PG_FUNCTION_INFO_V1(idem_append_query);
PG_FUNCTION_INFO_V1(idem_snapshot);
PG_FUNCTION_INFO_V1(idem_snapshot_query);
PG_FUNCTION_INFO_V1(idem_snapshot_prepare);
PG_FUNCTION_INFO_V1(idem_params);

Datum idem_checksum(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "rel");
        pg::require_arg(fcinfo, 1, "exclude_columns");
        const auto rel = *pg::arg_oid(fcinfo, 0);
        const auto exclude = *pg::arg_text_array(fcinfo, 1, "exclude_columns");
        return pg::text_result(pg_idempotent::checksum_relation(rel, exclude));
    });
}

Datum idem_checksum_query(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "query");
        // params: absent until ALTER EXTENSION UPDATE to 0.9.0.
        return pg::text_result(
            pg_idempotent::checksum_query(*pg::arg_text(fcinfo, 0), pg::arg_query_params(fcinfo, 1)));
    });
}

Datum idem_diff(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "a");
        pg::require_arg(fcinfo, 1, "b");
        pg::require_arg(fcinfo, 2, "exclude_columns");
        pg::require_arg(fcinfo, 3, "max_rows");
        pg_idempotent::diff_relations(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), *pg::arg_oid(fcinfo, 1),
                                      *pg::arg_text_array(fcinfo, 2, "exclude_columns"), *pg::arg_int4(fcinfo, 3));
        return Datum(0);
    });
}

// The support functions of the aggregate idem._digest_agg. They do not go
// through cpp_entry: the transition runs once per row, and all five are
// C-style PostgreSQL code with nothing to unwind (no C++ object with a
// destructor in their frames, only noexcept hashing); see
// pg/digest_aggregate.hpp.
Datum idem__digest_agg_add(PG_FUNCTION_ARGS)
{
    return pg::digest_agg_transition(fcinfo);
}
Datum idem__digest_agg_combine(PG_FUNCTION_ARGS)
{
    return pg::digest_agg_combine(fcinfo);
}
Datum idem__digest_agg_serialize(PG_FUNCTION_ARGS)
{
    return pg::digest_agg_serialize(fcinfo);
}
Datum idem__digest_agg_deserialize(PG_FUNCTION_ARGS)
{
    return pg::digest_agg_deserialize(fcinfo);
}
Datum idem__digest_agg_final(PG_FUNCTION_ARGS)
{
    return pg::digest_agg_final(fcinfo);
}
Datum idem__row_hash(PG_FUNCTION_ARGS)
{
    return pg::row_hash(fcinfo);
}
Datum idem__key_repeats(PG_FUNCTION_ARGS)
{
    return pg::key_repeats(fcinfo);
}
Datum idem__key_hash(PG_FUNCTION_ARGS)
{
    return pg::key_hash(fcinfo);
}
Datum idem__jsonb_same(PG_FUNCTION_ARGS)
{
    return pg::jsonb_same(fcinfo);
}
Datum idem__images_equal(PG_FUNCTION_ARGS)
{
    return pg::images_equal(fcinfo);
}
Datum idem__repeat_hashes_add(PG_FUNCTION_ARGS)
{
    return pg::repeat_hashes_transition(fcinfo);
}
Datum idem__repeat_hashes_final(PG_FUNCTION_ARGS)
{
    return pg::repeat_hashes_final(fcinfo);
}
Datum idem__digest_sample_agg_add(PG_FUNCTION_ARGS)
{
    return pg::digest_sample_agg_transition(fcinfo);
}
Datum idem__digest_sample_agg_combine(PG_FUNCTION_ARGS)
{
    return pg::digest_sample_agg_combine(fcinfo);
}
Datum idem__digest_sample_agg_serialize(PG_FUNCTION_ARGS)
{
    return pg::digest_sample_agg_serialize(fcinfo);
}
Datum idem__digest_sample_agg_deserialize(PG_FUNCTION_ARGS)
{
    return pg::digest_sample_agg_deserialize(fcinfo);
}
Datum idem__digest_sample_agg_final(PG_FUNCTION_ARGS)
{
    return pg::digest_sample_agg_final(fcinfo);
}

Datum idem__row_digest(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "row");
        return pg::uuid_result(pg::arg_record_digest(fcinfo, 0));
    });
}

Datum idem__boundary_probe(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg_idempotent::boundary_probe_longjmp(fcinfo);
        pg::require_arg(fcinfo, 0, "action");
        const auto n = pg_idempotent::boundary_probe(*pg::arg_text(fcinfo, 0), pg::arg_text(fcinfo, 1));
        return Int64GetDatum(n);
    });
}

// A boolean option added in a later version (false before ALTER EXTENSION
// UPDATE declares it); NULL is refused, naming it.
static bool later_flag(FunctionCallInfo fcinfo, int n, const char* name)
{
    if (PG_NARGS() <= n)
        return false;
    pg::require_arg(fcinfo, n, name);
    return *pg::arg_bool(fcinfo, n);
}

// on_schema_change (merge, append, snapshot): 'fail', 'ignore' or
// 'append_new_columns'.
static pg_idempotent::OnSchemaChange schema_change_arg(FunctionCallInfo fcinfo, int n)
{
    pg::require_arg(fcinfo, n, "on_schema_change");
    return pg_idempotent::on_schema_change_of(*pg::arg_text(fcinfo, n));
}

// merge and merge_query share everything after their second argument.
static pg_idempotent::MergeOptions merge_options(FunctionCallInfo fcinfo)
{
    pg_idempotent::MergeOptions o;
    o.key = pg::arg_text_array(fcinfo, 2, "key");
    o.version_columns = pg::arg_name_list(fcinfo, 3, "version_column");
    o.delete_column = pg::arg_text(fcinfo, 4);
    pg::require_arg(fcinfo, 5, "delete_missing");
    o.delete_missing = *pg::arg_bool(fcinfo, 5);
    o.delete_scope = pg::arg_text(fcinfo, 6);
    o.columns = pg::arg_text_array(fcinfo, 7, "columns");
    pg::require_arg(fcinfo, 8, "allow_empty");
    o.allow_empty = *pg::arg_bool(fcinfo, 8);
    pg::require_arg(fcinfo, 9, "dry_run");
    o.dry_run = *pg::arg_bool(fcinfo, 9);
    // exclude_columns came in 0.8.0: a database still at an older version
    // calls with ten arguments.
    if (PG_NARGS() > 10)
        o.exclude_columns = pg::arg_text_array(fcinfo, 10, "exclude_columns");
    // on_schema_change came in 0.9.0.
    if (PG_NARGS() > 11)
        o.on_schema_change = schema_change_arg(fcinfo, 11);
    return o;
}

// The target (argument 0) and the batch of merge/append and their _query
// forms: a relation or a query (argument 1), both required, and a query's
// bound parameters (argument params_arg, -1 for a relation). Called into a
// variable before anything reads argument 0 or the options (an argument
// list's order of evaluation is unspecified), so a NULL target or source is
// reported first, as before.
static pg_idempotent::BatchSource batch_source(FunctionCallInfo fcinfo, int params_arg)
{
    const bool query = params_arg >= 0;
    pg::require_arg(fcinfo, 0, "target");
    pg::require_arg(fcinfo, 1, query ? "query" : "source");
    pg_idempotent::BatchSource source;
    if (query) {
        source.query = pg::arg_text(fcinfo, 1);
        source.params = pg::arg_query_params(fcinfo, params_arg);
    } else {
        source.relation = pg::arg_oid(fcinfo, 1);
    }
    return source;
}

// Where each _query function takes params (0.9.0): after its other options.
static constexpr int kMergeQueryParams = 12;
static constexpr int kAppendQueryParams = 7;
static constexpr int kSnapshotQueryParams = 15;

Datum idem_merge(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        const pg_idempotent::BatchSource source = batch_source(fcinfo, -1);
        pg_idempotent::merge(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), source, merge_options(fcinfo));
        return Datum(0);
    });
}

Datum idem_merge_query(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        const pg_idempotent::BatchSource source = batch_source(fcinfo, kMergeQueryParams);
        pg_idempotent::merge(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), source, merge_options(fcinfo));
        return Datum(0);
    });
}

// append(target, source | query, key, exclude_columns, on_conflict, within,
// on_schema_change)
static pg_idempotent::AppendOptions append_options(FunctionCallInfo fcinfo)
{
    pg_idempotent::AppendOptions o;
    o.key = pg::arg_text_array(fcinfo, 2, "key");
    o.exclude_columns = pg::arg_text_array(fcinfo, 3, "exclude_columns");
    pg::require_arg(fcinfo, 4, "on_conflict");
    o.on_conflict = *pg::arg_text(fcinfo, 4);
    o.within = pg::arg_interval_text(fcinfo, 5);
    // on_schema_change came in 0.9.0.
    if (PG_NARGS() > 6)
        o.on_schema_change = schema_change_arg(fcinfo, 6);
    return o;
}

Datum idem_append(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        const pg_idempotent::BatchSource source = batch_source(fcinfo, -1);
        pg_idempotent::append(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), source, append_options(fcinfo));
        return Datum(0);
    });
}

Datum idem_append_query(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        const pg_idempotent::BatchSource source = batch_source(fcinfo, kAppendQueryParams);
        pg_idempotent::append(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), source, append_options(fcinfo));
        return Datum(0);
    });
}

// snapshot(target, source | query, key, strategy, updated_at, columns,
// exclude_columns, hard_deletes, valid_from, valid_to, as_of, allow_empty,
// deleted_column, valid_to_current, on_schema_change)
static pg_idempotent::SnapshotOptions snapshot_options(FunctionCallInfo fcinfo)
{
    pg_idempotent::SnapshotOptions o;
    pg::require_arg(fcinfo, 2, "key");
    o.key = *pg::arg_text_array(fcinfo, 2, "key");
    pg::require_arg(fcinfo, 3, "strategy");
    o.strategy = *pg::arg_text(fcinfo, 3);
    o.updated_at = pg::arg_name_list(fcinfo, 4, "updated_at");
    o.columns = pg::arg_text_array(fcinfo, 5, "columns");
    o.exclude_columns = pg::arg_text_array(fcinfo, 6, "exclude_columns");
    pg::require_arg(fcinfo, 7, "hard_deletes");
    o.hard_deletes = *pg::arg_text(fcinfo, 7);
    pg::require_arg(fcinfo, 8, "valid_from");
    o.valid_from = *pg::arg_text(fcinfo, 8);
    pg::require_arg(fcinfo, 9, "valid_to");
    o.valid_to = *pg::arg_text(fcinfo, 9);
    o.as_of = pg::arg_value(fcinfo, 10);
    pg::require_arg(fcinfo, 11, "allow_empty");
    o.allow_empty = *pg::arg_bool(fcinfo, 11);
    pg::require_arg(fcinfo, 12, "deleted_column");
    o.deleted_column = *pg::arg_text(fcinfo, 12);
    o.valid_to_current = pg::arg_text(fcinfo, 13);
    // on_schema_change came in 0.9.0.
    if (PG_NARGS() > 14)
        o.on_schema_change = schema_change_arg(fcinfo, 14);
    return o;
}

Datum idem_snapshot(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        const pg_idempotent::BatchSource source = batch_source(fcinfo, -1);
        pg_idempotent::snapshot(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), source, snapshot_options(fcinfo));
        return Datum(0);
    });
}

Datum idem_snapshot_query(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        const pg_idempotent::BatchSource source = batch_source(fcinfo, kSnapshotQueryParams);
        pg_idempotent::snapshot(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), source, snapshot_options(fcinfo));
        return Datum(0);
    });
}

Datum idem_params(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum { return pg::query_params_result(fcinfo); });
}

Datum idem_snapshot_prepare(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "target");
        pg::require_arg(fcinfo, 1, "key");
        pg::require_arg(fcinfo, 2, "valid_to");
        return pg::text_result(pg_idempotent::snapshot_prepare(*pg::arg_oid(fcinfo, 0),
                                                               *pg::arg_text_array(fcinfo, 1, "key"),
                                                               *pg::arg_text(fcinfo, 2), pg::arg_text(fcinfo, 3)));
    });
}

Datum idem_claim(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        pg::require_arg(fcinfo, 3, "wait");
        pg_idempotent::ClaimRequest r;
        r.key = *pg::arg_text(fcinfo, 0);
        r.scope = *pg::arg_text(fcinfo, 1);
        r.fingerprint = pg::arg_text(fcinfo, 2);
        r.wait = *pg::arg_bool(fcinfo, 3);
        r.lease = pg::arg_interval_text(fcinfo, 4);
        return BoolGetDatum(pg_idempotent::claim(r));
    });
}

Datum idem__grants_changed(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum { return pg::grant_table_changed(fcinfo); });
}

Datum idem_claim_lease(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        pg::require_arg(fcinfo, 2, "lease");
        pg::require_arg(fcinfo, 4, "wait");
        pg_idempotent::ClaimRequest r;
        r.key = *pg::arg_text(fcinfo, 0);
        r.scope = *pg::arg_text(fcinfo, 1);
        r.lease = pg::arg_interval_text(fcinfo, 2);
        r.fingerprint = pg::arg_text(fcinfo, 3);
        r.wait = *pg::arg_bool(fcinfo, 4);
        const std::optional<std::int64_t> token = pg_idempotent::claim_lease(r);
        if (!token)
            return std::nullopt;
        return Int64GetDatum(*token);
    });
}

Datum idem_check_lease(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        pg::require_arg(fcinfo, 2, "token");
        pg_idempotent::check_lease(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1), *pg::arg_int8(fcinfo, 2));
        PG_RETURN_VOID();
    });
}

Datum idem_claim_many(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "keys");
        pg::require_arg(fcinfo, 1, "scope");
        pg_idempotent::claim_many(pg::ResultSet(fcinfo), *pg::arg_text_array(fcinfo, 0, "keys"),
                                  *pg::arg_text(fcinfo, 1));
        return Datum(0);
    });
}

Datum idem_complete(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 2, "scope");
        pg_idempotent::complete(*pg::arg_text(fcinfo, 0), pg::arg_jsonb_text(fcinfo, 1), *pg::arg_text(fcinfo, 2),
                                pg::arg_int8(fcinfo, 3));
        PG_RETURN_VOID();
    });
}

Datum idem_save_point(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "recovery_point");
        pg::require_arg(fcinfo, 2, "scope");
        pg_idempotent::save_point(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1), *pg::arg_text(fcinfo, 2),
                                  pg::arg_int8(fcinfo, 3));
        PG_RETURN_VOID();
    });
}

Datum idem_result(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        auto r = pg_idempotent::result(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1));
        if (!r)
            return std::nullopt;
        return pg::jsonb_result(*r);
    });
}

Datum idem_once(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "query");
        pg::require_arg(fcinfo, 2, "scope");
        auto r = pg_idempotent::once(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1), *pg::arg_text(fcinfo, 2),
                                     pg::arg_text(fcinfo, 3));
        if (!r)
            return std::nullopt;
        return pg::jsonb_result(*r);
    });
}

Datum idem_key_status(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        pg_idempotent::key_status(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1));
        return Datum(0);
    });
}

Datum idem_forget(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        return BoolGetDatum(pg_idempotent::forget(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1)));
    });
}

Datum idem_purge_keys(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "older_than");
        return Int64GetDatum(pg_idempotent::purge_keys(*pg::arg_interval_text(fcinfo, 0), pg::arg_text(fcinfo, 1)));
    });
}

Datum idem_record_effect(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "kind");
        pg::require_arg(fcinfo, 2, "payload");
        pg::require_arg(fcinfo, 3, "scope");
        pg::require_arg(fcinfo, 5, "max_attempts");
        pg_idempotent::EffectRecord e;
        e.key = *pg::arg_text(fcinfo, 0);
        e.kind = *pg::arg_text(fcinfo, 1);
        e.payload = *pg::arg_jsonb_text(fcinfo, 2);
        e.scope = *pg::arg_text(fcinfo, 3);
        e.not_before = pg::arg_value(fcinfo, 4);
        e.max_attempts = *pg::arg_int4(fcinfo, 5);
        return BoolGetDatum(pg_idempotent::record_effect(e));
    });
}

Datum idem_record_effects(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "query");
        pg::require_arg(fcinfo, 1, "kind");
        pg::require_arg(fcinfo, 2, "scope");
        pg::require_arg(fcinfo, 3, "max_attempts");
        pg_idempotent::record_effects(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1),
                                      *pg::arg_text(fcinfo, 2), *pg::arg_int4(fcinfo, 3),
                                      pg::arg_query_params(fcinfo, 4));
        return Datum(0);
    });
}

Datum idem_take_effects(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "kind");
        pg::require_arg(fcinfo, 1, "n");
        pg::require_arg(fcinfo, 2, "lease");
        pg::require_arg(fcinfo, 3, "scope");
        pg_idempotent::TakeRequest r;
        r.kind = *pg::arg_text(fcinfo, 0);
        r.n = *pg::arg_int4(fcinfo, 1);
        r.lease = *pg::arg_interval_text(fcinfo, 2);
        r.scope = *pg::arg_text(fcinfo, 3);
        r.dispatcher = pg::arg_text(fcinfo, 4);
        pg_idempotent::take_effects(pg::ResultSet(fcinfo), r);
        return Datum(0);
    });
}

// key, token and scope at positions 0, 1 and last.
static pg_idempotent::Report effect_report(FunctionCallInfo fcinfo, int scope_at)
{
    pg::require_arg(fcinfo, 0, "key");
    pg::require_arg(fcinfo, 1, "token");
    pg::require_arg(fcinfo, scope_at, "scope");
    return pg_idempotent::Report{*pg::arg_text(fcinfo, 0), *pg::arg_int8(fcinfo, 1), *pg::arg_text(fcinfo, scope_at)};
}

Datum idem_renew_effect(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 2, "lease");
        const std::string until =
            pg_idempotent::renew_effect(effect_report(fcinfo, 3), *pg::arg_interval_text(fcinfo, 2));
        return static_cast<Datum>(pg::parse_canonical(until, TIMESTAMPTZOID).datum);
    });
}

Datum idem_effect_done(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg_idempotent::effect_done(effect_report(fcinfo, 3), pg::arg_jsonb_text(fcinfo, 2));
        PG_RETURN_VOID();
    });
}

Datum idem_effects_done(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "keys");
        pg::require_arg(fcinfo, 1, "tokens");
        pg::require_arg(fcinfo, 3, "scope");
        return Int64GetDatum(pg_idempotent::effects_done(pg::arg_value(fcinfo, 0), pg::arg_value(fcinfo, 1),
                                                         pg::arg_value(fcinfo, 2), *pg::arg_text(fcinfo, 3)));
    });
}

Datum idem_listen_effects(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "kind");
        pg::require_arg(fcinfo, 1, "scope");
        pg_idempotent::listen_effects(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1));
        return Datum(0);
    });
}

Datum idem_unlisten_effects(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "kind");
        pg::require_arg(fcinfo, 1, "scope");
        pg_idempotent::unlisten_effects(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1));
        PG_RETURN_VOID();
    });
}

Datum idem_effect_failed(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 3, "retry");
        return pg::text_result(pg_idempotent::effect_failed(effect_report(fcinfo, 5), pg::arg_text(fcinfo, 2),
                                                            *pg::arg_bool(fcinfo, 3), pg::arg_interval_text(fcinfo, 4),
                                                            false));
    });
}

Datum idem_effect_uncertain(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        return pg::text_result(pg_idempotent::effect_failed(effect_report(fcinfo, 4), pg::arg_text(fcinfo, 2), true,
                                                            pg::arg_interval_text(fcinfo, 3), true));
    });
}

Datum idem_effect_status(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        pg_idempotent::effect_status(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1));
        return Datum(0);
    });
}

Datum idem_effect_counts(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "scope");
        pg_idempotent::effect_counts(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem_effect_keys(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "scope");
        pg_idempotent::effect_keys(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem_retry_effect(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "key");
        pg::require_arg(fcinfo, 1, "scope");
        return BoolGetDatum(pg_idempotent::retry_effect(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1)));
    });
}

Datum idem_purge_effects(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "older_than");
        pg::require_arg(fcinfo, 1, "scope");
        return Int64GetDatum(pg_idempotent::purge_effects(*pg::arg_interval_text(fcinfo, 0), *pg::arg_text(fcinfo, 1)));
    });
}

Datum idem_watermark(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        pg::require_arg(fcinfo, 0, "job");
        auto w = pg_idempotent::watermark_text(*pg::arg_text(fcinfo, 0));
        if (!w)
            return std::nullopt;
        return pg::text_result(*w);
    });
}

Datum idem_watermark_typed(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        pg::require_arg(fcinfo, 0, "job");
        const auto as_type = pg::arg_value(fcinfo, 1);
        auto w = pg_idempotent::watermark_typed(*pg::arg_text(fcinfo, 0), as_type.type);
        if (!w)
            return std::nullopt;
        return static_cast<Datum>(w->datum);
    });
}

// lock_job(job, nowait, wait): 0.8.0 names the argument wait, as claim and
// claim_lease do; nowait (0.1.0 to 0.7.0, and positional calls) still works
// for this release, with a NOTICE. Before ALTER EXTENSION UPDATE the SQL
// object is lock_job(job, nowait) and passes two arguments.
static bool lock_job_waits(FunctionCallInfo fcinfo)
{
    if (PG_NARGS() < 3) {
        pg::require_arg(fcinfo, 1, "nowait");
        return !*pg::arg_bool(fcinfo, 1);
    }
    const std::optional<bool> nowait = pg::arg_bool(fcinfo, 1);
    const std::optional<bool> wait = pg::arg_bool(fcinfo, 2);
    if (nowait && wait && *nowait == *wait)
        throw pg::UserError(pg::sqlstate::kInvalidParameterValue, "wait and nowait contradict each other", {},
                            "Pass only wait: nowait is deprecated.");
    if (nowait)
        pg::notice("idem.lock_job's argument nowait is deprecated and goes in the next release",
                   std::string("Pass wait => ") + (*nowait ? "false" : "true") + " instead.");
    return wait.value_or(nowait ? !*nowait : true);
}

Datum idem_lock_job(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        pg::require_arg(fcinfo, 0, "job");
        const bool wait = lock_job_waits(fcinfo);
        auto w = pg_idempotent::lock_job(*pg::arg_text(fcinfo, 0), !wait);
        if (!w)
            return std::nullopt;
        return pg::text_result(*w);
    });
}

Datum idem_advance(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg_idempotent::advance(*pg::arg_text(fcinfo, 0), pg::arg_value(fcinfo, 1), pg::arg_text(fcinfo, 2));
        PG_RETURN_VOID();
    });
}

Datum idem_rewind(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg_idempotent::rewind(*pg::arg_text(fcinfo, 0), pg::arg_value(fcinfo, 1));
        PG_RETURN_VOID();
    });
}

Datum idem_run_once(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg::require_arg(fcinfo, 2, "query");
        return BoolGetDatum(
            pg_idempotent::run_once(*pg::arg_text(fcinfo, 0), pg::arg_value(fcinfo, 1), *pg::arg_text(fcinfo, 2)));
    });
}

Datum idem_mark_window(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg_idempotent::mark_window(*pg::arg_text(fcinfo, 0), pg::arg_value(fcinfo, 1), pg::arg_value(fcinfo, 2));
        PG_RETURN_VOID();
    });
}

Datum idem_windows(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg_idempotent::windows(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem_gaps(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg_idempotent::gaps(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0), pg::arg_value(fcinfo, 1),
                            pg::arg_value(fcinfo, 2), pg::arg_value(fcinfo, 3));
        return Datum(0);
    });
}

Datum idem_assert_rerun_safe(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "job");
        pg::require_arg(fcinfo, 1, "tables");
        pg::require_arg(fcinfo, 2, "runs");
        pg::require_arg(fcinfo, 3, "exclude_columns");
        pg::require_arg(fcinfo, 4, "rollback");
        // allow_unchanged and created_tables came with 0.9.0's SQL.
        bool allow_unchanged = false;
        std::vector<std::string> created;
        if (PG_NARGS() >= 7) {
            pg::require_arg(fcinfo, 5, "allow_unchanged");
            pg::require_arg(fcinfo, 6, "created_tables");
            allow_unchanged = *pg::arg_bool(fcinfo, 5);
            created = *pg::arg_text_array(fcinfo, 6, "created_tables");
        }
        pg_idempotent::assert_rerun_safe(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0),
                                         pg::arg_oid_array(fcinfo, 1, "tables"), *pg::arg_int4(fcinfo, 2),
                                         *pg::arg_text_array(fcinfo, 3, "exclude_columns"), *pg::arg_bool(fcinfo, 4),
                                         allow_unchanged, created);
        return Datum(0);
    });
}

Datum idem_publish(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        pg::require_arg(fcinfo, 1, "query");
        pg::require_arg(fcinfo, 2, "keep");
        // params: absent until ALTER EXTENSION UPDATE to 0.9.0.
        return Int32GetDatum(pg_idempotent::publish(*pg::arg_text(fcinfo, 0), *pg::arg_text(fcinfo, 1),
                                                    *pg::arg_int4(fcinfo, 2), pg::arg_text(fcinfo, 3),
                                                    pg::arg_interval_text(fcinfo, 4), pg::arg_query_params(fcinfo, 5)));
    });
}

Datum idem_rollback(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        // hold: absent (false) until ALTER EXTENSION UPDATE to 0.9.0.
        return Int32GetDatum(pg_idempotent::rollback(*pg::arg_text(fcinfo, 0), pg::arg_int4(fcinfo, 1),
                                                     pg::arg_interval_text(fcinfo, 2), later_flag(fcinfo, 3, "hold")));
    });
}

Datum idem_hold(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        return BoolGetDatum(pg_idempotent::hold(*pg::arg_text(fcinfo, 0)));
    });
}

Datum idem_release(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        return BoolGetDatum(pg_idempotent::release(*pg::arg_text(fcinfo, 0)));
    });
}

Datum idem_dataset_status(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        pg_idempotent::dataset_status(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem_adopt(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        pg_idempotent::adopt(*pg::arg_text(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem__tombstones(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "target");
        pg_idempotent::tombstones(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem__tombstones_put(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "target");
        return Int64GetDatum(pg_idempotent::put_tombstones(*pg::arg_oid(fcinfo, 0), pg::arg_value(fcinfo, 1),
                                                           pg::arg_value(fcinfo, 2), pg::arg_value(fcinfo, 3)));
    });
}

// idem._raise(code, message, detail, hint): the error a statement the
// extension built raises when a check fails (a CASE calls it). A C function
// since 0.9.0: as PL/pgSQL every such error carried "CONTEXT: PL/pgSQL
// function idem._raise(text,text,text,text) line 3 at RAISE", naming an
// internal. A code that is not five of [0-9A-Z] is 22023's.
Datum idem__raise(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        // The code outlives this frame: the boundary raises it after return.
        static char code[6];
        const std::string c = pg::arg_text(fcinfo, 0).value_or("");
        const bool valid =
            c.size() == 5 && c.find_first_not_of("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string::npos;
        const std::string chosen = valid ? c : std::string(pg::sqlstate::kInvalidParameterValue);
        chosen.copy(code, 5);
        code[5] = '\0';
        throw pg::UserError(code, pg::arg_text(fcinfo, 1).value_or("error raised by pg_idempotent"),
                            pg::arg_text(fcinfo, 2).value_or(""), pg::arg_text(fcinfo, 3).value_or(""));
    });
}

// STRICT: every argument is given (merge's first load and append call it).
Datum idem__count_conflict(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        return BoolGetDatum(
            pg_idempotent::note_conflict(*pg::arg_oid(fcinfo, 0), *pg::arg_bool(fcinfo, 1), *pg::arg_bool(fcinfo, 2)));
    });
}

Datum idem_purge_tombstones(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        if (PG_ARGISNULL(0) || PG_ARGISNULL(1))  // the message 0.6.0 gave
            throw pg::UserError(pg::sqlstate::kNullValueNotAllowed, "target and older_than must not be NULL", {},
                                "Pass the merge target and an age, for example interval '30 days'.");
        return Int64GetDatum(
            pg_idempotent::purge_tombstones(*pg::arg_oid(fcinfo, 0), *pg::arg_interval_text(fcinfo, 1)));
    });
}

Datum idem_versions(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        pg_idempotent::versions(pg::ResultSet(fcinfo), *pg::arg_text(fcinfo, 0));
        return Datum(0);
    });
}

Datum idem_pin(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "dataset");
        pg::require_arg(fcinfo, 1, "version");
        pg::require_arg(fcinfo, 2, "pinned");
        pg_idempotent::pin(*pg::arg_text(fcinfo, 0), *pg::arg_int4(fcinfo, 1), *pg::arg_bool(fcinfo, 2));
        PG_RETURN_VOID();
    });
}

Datum idem__canonical_text(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo,
                         [&]() -> Datum { return pg::text_result(pg::canonical_text(pg::arg_value(fcinfo, 0))); });
}

Datum idem__from_canonical(PG_FUNCTION_ARGS)
{
    return nullable_entry(fcinfo, [&]() -> std::optional<Datum> {
        const auto text = pg::arg_text(fcinfo, 0);
        if (!text)
            return std::nullopt;
        return static_cast<Datum>(pg::parse_canonical(*text, pg::arg_value(fcinfo, 1).type).datum);
    });
}

Datum idem_replace_where(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "target");
        pg::require_arg(fcinfo, 1, "predicate");
        pg::require_arg(fcinfo, 2, "query");
        // params: absent until ALTER EXTENSION UPDATE to 0.9.0.
        pg_idempotent::replace_where(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), *pg::arg_text(fcinfo, 1),
                                     *pg::arg_text(fcinfo, 2), pg::arg_interval_text(fcinfo, 3),
                                     pg::arg_query_params(fcinfo, 4));
        return Datum(0);
    });
}

// overwrite_partition(parent, value, query, mode, keep_old, lock_timeout,
// accept_losses (0.9.0), create_partition (0.9.0), params (0.9.0))
static Datum overwrite_entry(FunctionCallInfo fcinfo, bool text_value)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "parent");
        pg::require_arg(fcinfo, 1, "value");
        pg::require_arg(fcinfo, 2, "query");
        pg::require_arg(fcinfo, 3, "mode");
        pg::require_arg(fcinfo, 4, "keep_old");
        pg::TypedValue value;
        std::optional<std::string> value_text;
        if (text_value)
            value_text = pg::arg_text(fcinfo, 1);
        else
            value = pg::arg_value(fcinfo, 1);
        pg_idempotent::OverwriteOptions o;
        o.mode = *pg::arg_text(fcinfo, 3);
        o.keep_old = *pg::arg_bool(fcinfo, 4);
        o.lock_timeout = pg::arg_interval_text(fcinfo, 5);
        o.accept_losses = later_flag(fcinfo, 6, "accept_losses");
        o.create_partition = later_flag(fcinfo, 7, "create_partition");
        o.params = pg::arg_query_params(fcinfo, 8);
        pg_idempotent::overwrite_partition(pg::ResultSet(fcinfo), *pg::arg_oid(fcinfo, 0), value, value_text,
                                           *pg::arg_text(fcinfo, 2), o);
        return Datum(0);
    });
}

Datum idem_overwrite_partition(PG_FUNCTION_ARGS)
{
    return overwrite_entry(fcinfo, false);
}
Datum idem_overwrite_partition_text(PG_FUNCTION_ARGS)
{
    return overwrite_entry(fcinfo, true);
}

Datum idem_swap_partition(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "partition");
        pg::require_arg(fcinfo, 1, "staging");
        pg::require_arg(fcinfo, 2, "keep_old");
        if (PG_NARGS() > 4)  // absent (false) until ALTER EXTENSION UPDATE to 0.9.0
            pg::require_arg(fcinfo, 4, "accept_losses");
        return ObjectIdGetDatum(
            pg_idempotent::swap_partition(*pg::arg_oid(fcinfo, 0), *pg::arg_oid(fcinfo, 1), *pg::arg_bool(fcinfo, 2),
                                          pg::arg_interval_text(fcinfo, 3), pg::arg_bool(fcinfo, 4).value_or(false)));
    });
}

Datum idem_purge_history(PG_FUNCTION_ARGS)
{
    return pg::cpp_entry(fcinfo, [&]() -> Datum {
        pg::require_arg(fcinfo, 0, "older_than");
        return Int64GetDatum(pg_idempotent::purge_history(*pg::arg_interval_text(fcinfo, 0)));
    });
}

}  // extern "C"
#pragma GCC visibility pop
