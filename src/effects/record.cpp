// Recording effects: idem.record_effect (one) and idem.record_effects (the
// rows of a query), in the caller's transaction.
#include <algorithm>
#include <vector>

#include "common/effect_log.hpp"
#include "common/scope_grants.hpp"
#include "core/effect_lane.hpp"
#include "core/sql_text.hpp"
#include "effects/effect_rows.hpp"
#include "effects/effects.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/named_rows.hpp"
#include "pg/query_params.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/transactions.hpp"
#include "pg/values.hpp"
#include "pg_native/effect_row_insert.hpp"

namespace pg_idempotent {

namespace {

using effects::shown;
using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

void require_attempts(std::int32_t max_attempts)
{
    if (max_attempts < 1)
        throw UserError(sqlstate::kInvalidParameterValue, "max_attempts must be at least 1", {},
                        "Leave it out for 10 attempts.");
}

UserError other_effect(const std::string& key, const std::string& scope, const std::string& what)
{
    return UserError(sqlstate::kFingerprintMismatch,
                     "effect key \"" + shown(key) + "\" in scope \"" + scope + "\" was recorded for another effect",
                     what, "A rerun must record the same effect (kind and payload); another effect needs another key.");
}

// Returns whether the effect is due now.
const char* const kInsertOne =
    "INSERT INTO idem.effects AS e (scope, key, kind, payload, not_before, max_attempts, lane)"
    " VALUES ($1, $2, $3, $4::pg_catalog.jsonb, COALESCE($5::pg_catalog.timestamptz, pg_catalog.now()),"
    " $6::pg_catalog.int4, $7::pg_catalog.int4)"
    " ON CONFLICT (scope, key) DO NOTHING"
    " RETURNING (e.not_before OPERATOR(pg_catalog.<=) pg_catalog.now())::pg_catalog.text";

const char* const kStoredOne =
    "SELECT e.kind, (e.payload OPERATOR(pg_catalog.=) $3::pg_catalog.jsonb)::pg_catalog.text"
    " FROM idem.effects e WHERE e.scope OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.=) $2";

// The key is there (a conflict): the same effect, or ID001. Not seen at
// all: committed after this transaction's snapshot (REPEATABLE READ).
bool recorded_before(pg::SpiSession& spi, const EffectRecord& e)
{
    auto r = spi.query_saved(kStoredOne, {Param::of_text(e.scope), Param::of_text(e.key), Param::of_text(e.payload)});
    if (r.rows.empty())
        throw UserError(sqlstate::kSerializationFailure, "could not serialize access due to concurrent update",
                        "Effect key \"" + shown(e.key) + "\" was recorded by a transaction this one cannot see.",
                        "Retry the transaction.");
    if (r.rows[0][0] != std::optional<std::string>(e.kind))
        throw other_effect(
            e.key, e.scope,
            "It was recorded with kind \"" + r.rows[0][0].value_or("") + "\", this call has \"" + e.kind + "\".");
    if (r.rows[0][1] != std::optional<std::string>("true"))
        throw other_effect(e.key, e.scope, "It was recorded with another payload.");
    return false;
}

// The effect's row inserted, or found there, by SQL (where the direct
// insert cannot run: pg_native/effect_row_insert.hpp says when).
pg::EffectInsert insert_by_sql(pg::SpiSession& spi, const EffectRecord& e, std::int32_t lane)
{
    auto r = spi.query_saved(
        kInsertOne, {Param::of_text(e.scope), Param::of_text(e.key), Param::of_text(e.kind), Param::of_text(e.payload),
                     Param::of_value(e.not_before), Param::of_int4(e.max_attempts), Param::of_int4(lane)});
    pg::EffectInsert ins;
    ins.outcome = r.rows.empty() ? pg::EffectInsert::Outcome::kExists : pg::EffectInsert::Outcome::kInserted;
    ins.due = !r.rows.empty() && r.rows[0][0] == std::optional<std::string>("true");
    return ins;
}

void recorded_now(const EffectRecord& e, bool due)
{
    note_recorded_effect(e.scope, e.key);
    if (due)
        effects::wake_dispatchers(e.scope, e.kind);
}

}  // namespace

// A new effect needs no statement: inserted directly as the extension
// owner without pinning search_path (nothing is looked up by name; a
// CHECK constraint someone added sends it to the pinned path), SPI never
// connected when the grant is cached. A key already there is read back by
// SQL (the same effect, or ID001), as is everything where the direct
// insert cannot run.
bool record_effect(const EffectRecord& e)
{
    effects::require_key(e.key);
    effects::require_kind(e.kind);
    require_attempts(e.max_attempts);
    effects::require_scope(e.scope);
    pg::SpiSession spi{pg::SpiSession::Deferred{}};
    check_scope_usage(spi, ScopeKind::kEffects, e.scope);
    const std::int32_t lane = core::effect_lane(e.scope, e.kind);
    pg::EffectInsert ins;
    pg::as_extension_owner_without_sql([&] {
        ins = pg::insert_effect_row({e.scope, e.key, e.kind, e.payload, e.not_before, e.max_attempts, lane, false});
        if (ins.outcome == pg::EffectInsert::Outcome::kInserted)
            recorded_now(e, ins.due);
    });
    bool recorded = ins.outcome == pg::EffectInsert::Outcome::kInserted;
    if (!recorded) {
        pg::as_extension_owner([&] {
            if (ins.outcome == pg::EffectInsert::Outcome::kUnsupported)  // a CHECK added: evaluated pinned
                ins = pg::insert_effect_row(
                    {e.scope, e.key, e.kind, e.payload, e.not_before, e.max_attempts, lane, true});
            if (ins.outcome == pg::EffectInsert::Outcome::kUnsupported)
                ins = insert_by_sql(spi, e, lane);
            recorded = ins.outcome == pg::EffectInsert::Outcome::kInserted;
            if (recorded)
                recorded_now(e, ins.due);
            else
                recorded = recorded_before(spi, e);
        });
    }
    spi.finish();
    return recorded;
}

namespace {

// The caller's query, by the caller's rights, as the batch's three columns
// (key, payload, not_before: NULL for now), gathered as the relation
// idem_batch.
std::string batch_query(const std::string& query, const pg::QueryParams& params)
{
    bool key = false;
    bool payload = false;
    bool not_before = false;
    for (const auto& c : pg::describe_query(query, params.values)) {
        key |= c.name == "key";
        payload |= c.name == "payload";
        not_before |= c.name == "not_before";
    }
    if (!key || !payload)
        throw UserError(sqlstate::kUndefinedColumn, "the query must return the columns key and payload",
                        "It returns each effect to record: key (text), payload (jsonb) and optionally "
                        "not_before (timestamptz).",
                        "Name them: SELECT 'charge:' || order_id AS key, jsonb_build_object(...) AS payload FROM ...");
    return "SELECT q.key::pg_catalog.text, q.payload::pg_catalog.jsonb, " +
           std::string(not_before ? "q.not_before::pg_catalog.timestamptz" : "NULL::pg_catalog.timestamptz") +
           " FROM " + core::as_subquery(query) + " AS q";
}

// Memory for the batch: gathered (past it, in a temporary file), and for
// the hash that checks it against what is recorded (work_mem where that is
// more). 64 MB holds about a million effects; at the default work_mem of
// 4 MB, 100,000 went to disk twice, a tenth of a rerun's time (bench/README).
const int kBatchBudgetKb = 65536;

// Past this many effects in the outbox per row of the batch, probing the
// primary key per row is cheaper than hashing the outbox (about 3 on this
// machine: bench/README).
const std::int64_t kProbeRatio = 4;

// The name the gathered batch is registered under for the owner's
// statements (an ephemeral named relation hides a table of that name).
const char* const kBatchName = "idem_batch";

// The batch's rows, read from the gathered relation ($1 is the scope, $2
// the kind, $3 max_attempts, $4 the lane).
const std::string kBatch = std::string("b AS (SELECT g.k, g.p, g.nb FROM ") + kBatchName + " g)";

// What the batch holds against idem.effects, in one pass: NULL keys, NULL
// payloads, a malformed key, rows whose key is recorded, the first key
// recorded for another effect, rows. Read on the statement's snapshot.
std::string batch_check_sql()
{
    return std::string("WITH ") + kBatch +
           " SELECT pg_catalog.count(*) FILTER (WHERE b.k IS NULL)::pg_catalog.text,"
           " pg_catalog.count(*) FILTER (WHERE b.p IS NULL)::pg_catalog.text,"
           " pg_catalog.min(b.k) FILTER (WHERE b.k OPERATOR(pg_catalog.=) ''"
           "  OR pg_catalog.octet_length(b.k) OPERATOR(pg_catalog.>) 512),"
           " pg_catalog.count(e.key)::pg_catalog.text,"
           " pg_catalog.min(b.k) FILTER (WHERE e.key IS NOT NULL AND (e.kind OPERATOR(pg_catalog.<>) $2"
           "  OR NOT idem._jsonb_same(e.payload, b.p))),"
           " pg_catalog.count(*)::pg_catalog.text,"
           " pg_catalog.bool_or(b.nb IS NULL OR b.nb OPERATOR(pg_catalog.<=) pg_catalog.now())::pg_catalog.text,"
           " (SELECT f.k FROM " +
           kBatchName +
           " f LIMIT 1)"
           " FROM b LEFT JOIN idem.effects e ON e.scope OPERATOR(pg_catalog.=) $1"
           " AND e.key OPERATOR(pg_catalog.=) b.k";
}

struct BatchCheck {
    std::int64_t recorded_rows = 0;  // rows whose key is recorded
    std::int64_t rows = 0;
    bool due = false;  // a row deliverable now
    std::string first_key;
};

std::int64_t count_of(const std::optional<std::string>& cell)
{
    return std::stoll(cell.value_or("0"));
}

// The check: 22004, 22023 or ID001 (what_before says when the other effect
// was recorded), else the counts.
BatchCheck check_batch(pg::SpiSession& spi, const std::string& scope, const pg::Params& p, const char* what_before)
{
    const pg::Row r = spi.query(batch_check_sql(), p, true).rows.at(0);
    if (count_of(r.at(0)) > 0 || count_of(r.at(1)) > 0)
        throw UserError(sqlstate::kNullValueNotAllowed,
                        std::string("the query returned a NULL ") + (count_of(r[0]) > 0 ? "key" : "payload"), {},
                        "Every effect needs a key and a payload (jsonb: '{}' for none).");
    if (r.at(2))
        effects::require_key(*r[2]);
    if (r.at(4))
        throw other_effect(*r[4], scope, what_before);
    return BatchCheck{count_of(r.at(3)), count_of(r.at(5)), r.at(6) == std::optional<std::string>("true"),
                      r.at(7).value_or("")};
}

// A key the batch gives twice, with two payloads: ID001.
void check_repeats(pg::SpiSession& spi, const std::string& scope, const pg::Params& p)
{
    auto r = spi.query(std::string("WITH ") + kBatch +
                           " SELECT pg_catalog.min(g.k) FROM (SELECT b.k FROM b GROUP BY b.k"
                           " HAVING pg_catalog.count(DISTINCT b.p) OPERATOR(pg_catalog.>) 1) g",
                       p, true);
    if (r.rows.at(0).at(0))
        throw other_effect(*r.rows[0][0], scope, "The query returns it twice with different payloads.");
}

const char* const kInsertColumns =
    "INSERT INTO idem.effects AS e (scope, key, kind, payload, not_before, max_attempts, lane)"
    " SELECT $1, b.k, $2, b.p, COALESCE(b.nb, pg_catalog.now()), $3::pg_catalog.int4, $4::pg_catalog.int4 FROM b";

// Every row of the batch, when none is recorded: a plain INSERT (23505
// when the batch repeats a key, or a concurrent transaction recorded one).
std::int64_t insert_all(pg::SpiSession& spi, const pg::Params& p)
{
    return static_cast<std::int64_t>(spi.execute(std::string("WITH ") + kBatch + " " + kInsertColumns, p));
}

// The rows not recorded; returns (rows inserted, any due now, the least
// key inserted).
pg::Row insert_missing(pg::SpiSession& spi, const pg::Params& p)
{
    return spi
        .query(std::string("WITH ") + kBatch + ", ins AS (" + kInsertColumns +
                   " ON CONFLICT (scope, key) DO NOTHING"
                   "  RETURNING e.key, e.not_before OPERATOR(pg_catalog.<=) pg_catalog.now() AS due)"
                   " SELECT pg_catalog.count(*)::pg_catalog.text, pg_catalog.bool_or(ins.due)::pg_catalog.text,"
                   " pg_catalog.min(ins.key) FROM ins",
               p, true)
        .rows.at(0);
}

// The run's note of what it recorded, and the doorbell when an effect
// recorded now is due.
void note_recorded(const std::string& scope, const std::string& kind, const std::string& first_key,
                   std::int64_t recorded, bool due)
{
    note_recorded_effects(scope, first_key, static_cast<std::uint64_t>(recorded));
    if (recorded > 0 && due)
        effects::wake_dispatchers(scope, kind);
}

// Whether the outbox holds more than kProbeRatio times the batch's rows
// (by the planner's last count of idem.effects): then the check probes the
// primary key once per row instead of hashing the scope's effects. The
// planner cannot tell on its own: the gathered rows have no statistics, so
// it takes their keys to repeat and hashes the outbox, which took twice the
// probes' time for 100,000 keys among a million effects (bench/README).
bool outbox_outgrows(pg::SpiSession& spi, std::int64_t rows)
{
    const auto r = spi.query_saved(
        "SELECT GREATEST(c.reltuples, 0)::pg_catalog.int8::pg_catalog.text FROM pg_catalog.pg_class c"
        " WHERE c.oid OPERATOR(pg_catalog.=) 'idem.effects'::pg_catalog.regclass");
    return count_of(r.rows.at(0).at(0)) > kProbeRatio * rows;
}

// What a batch recorded: rows inserted now, rows whose effect was there.
struct BatchOutcome {
    std::int64_t recorded = 0;
    std::int64_t already = 0;
};

// The gathered batch (idem_batch) checked against what is recorded (nothing
// written when every key is there, the same effect); inserted as a plain
// INSERT when no key is, which a repeat within the batch or a concurrent
// record of a key fails with 23505 (in a subtransaction); else ON CONFLICT
// DO NOTHING, and checked again on a new snapshot, which must see every key
// (40001 under REPEATABLE READ when it cannot). As the extension owner.
BatchOutcome record_batch(pg::SpiSession& spi, const std::string& scope, const std::string& kind, const pg::Params& p)
{
    const BatchCheck before =
        check_batch(spi, scope, p, "It was recorded before with another kind or payload than this batch gives it.");
    BatchOutcome out;
    if (before.recorded_rows == 0 && before.rows > 0) {
        const auto failed = pg::try_in_subtransaction([&] { out.recorded = insert_all(spi, p); });
        if (failed && pg::error_sqlstate(*failed) != sqlstate::kUniqueViolation)
            throw *failed;
        if (!failed) {
            note_recorded(scope, kind, before.first_key, out.recorded, before.due);
            return out;
        }
    }
    if (before.recorded_rows == before.rows) {  // every effect is there, the same
        out.already = before.rows;
        note_recorded(scope, kind, before.first_key, 0, false);
        return out;
    }
    check_repeats(spi, scope, p);
    const pg::Row ins = insert_missing(spi, p);
    const BatchCheck after =
        check_batch(spi, scope, p, "It was recorded by a concurrent transaction with another kind or payload.");
    if (after.recorded_rows < after.rows)
        throw UserError(sqlstate::kSerializationFailure, "could not serialize access due to concurrent update",
                        "Effects of this batch were recorded by a transaction this one cannot see.",
                        "Retry the transaction.");
    out.recorded = count_of(ins.at(0));
    out.already = after.rows - out.recorded;
    note_recorded(scope, kind, ins.at(2).value_or(""), out.recorded, ins.at(1) == std::optional<std::string>("true"));
    return out;
}

}  // namespace

// The caller's query runs once, by the caller's rights, into the batch
// relation; the owner's statements read it from there.
void record_effects(const pg::ResultSet& out, const std::string& query, const std::string& kind,
                    const std::string& scope, std::int32_t max_attempts, const pg::QueryParams& params)
{
    effects::require_kind(kind);
    effects::require_scope(scope);
    require_attempts(max_attempts);
    pg::require_bound(query, params, "the query");
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kEffects, scope);
    BatchOutcome done;
    {
        pg::NamedRows batch(
            spi, kBatchName,
            {{"k", pg::NamedRowType::kText}, {"p", pg::NamedRowType::kJsonb}, {"nb", pg::NamedRowType::kTimestamptz}},
            batch_query(query, params), params.values, kBatchBudgetKb);
        const std::string memory = std::to_string(std::max(kBatchBudgetKb, pg::work_mem_kb())) + "kB";
        pg::as_extension_owner([&] {
            pg::Settings settings{{"work_mem", memory.c_str()}};
            if (outbox_outgrows(spi, batch.rows()))
                settings.insert(settings.end(), {{"enable_hashjoin", "off"}, {"enable_mergejoin", "off"}});
            pg::with_settings(settings, [&] {
                done = record_batch(spi, scope, kind,
                                    {Param::of_text(scope), Param::of_text(kind), Param::of_int4(max_attempts),
                                     Param::of_int4(core::effect_lane(scope, kind))});
            });
        });
        batch.release();
    }
    pg::return_text_rows(out, {{std::to_string(done.recorded), std::to_string(done.already)}});
    spi.finish();
}

}  // namespace pg_idempotent
