#include "pg_native/effect_row_insert.hpp"

#include "pg/guard.hpp"
#include "pg_native/speculative_insert.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"
}

namespace pg_idempotent::pg {

namespace {

// idem.effects as released in 0.9.0, in table order.
enum Column {
    kScope,
    kKey,
    kKind,
    kPayload,
    kState,
    kNotBefore,
    kAttempts,
    kMaxAttempts,
    kToken,
    kLeaseUntil,
    kDispatcher,
    kUncertain,
    kLastError,
    kAnswer,
    kRecordedAt,
    kDoneAt,
    kLane,
    kColumnCount
};

const ColumnSpec kColumns[kColumnCount] = {
    {"scope", TEXTOID},
    {"key", TEXTOID},
    {"kind", TEXTOID},
    {"payload", JSONBOID},
    {"state", TEXTOID},
    {"not_before", TIMESTAMPTZOID},
    {"attempts", INT4OID},
    {"max_attempts", INT4OID},
    {"token", INT8OID},
    {"lease_until", TIMESTAMPTZOID},
    {"dispatcher", TEXTOID},
    {"uncertain", BOOLOID},
    {"last_error", TEXTOID},
    {"answer", JSONBOID},
    {"recorded_at", TIMESTAMPTZOID},
    {"done_at", TIMESTAMPTZOID},
    {"lane", INT4OID},
};

// Whether the row needs the executor's check: the released table has no
// CHECK constraint (pg_idempotent--0.8.0--0.9.0.sql says why), and the
// function sets every NOT NULL column; anything else is checked as the SQL
// would check it.
bool needs_constraint_check(const InsertTarget& t)
{
    const TupleConstr* constr = t.rel->rd_att->constr;
    if (constr == nullptr)
        return false;
    if (constr->num_check > 0)
        return true;
    const TupleDesc desc = RelationGetDescr(t.rel);
    for (int i = 0; i < desc->natts; ++i) {
        if (TupleDescAttr(desc, i)->attnotnull && t.slot->tts_isnull[i])
            return true;
    }
    return false;
}

Datum text_of(const std::string& s)
{
    return text_datum(s.data(), s.size());
}

// The row record_effect's SQL writes, the transaction id assigned only
// now (a duplicate assigns none). Returns whether it is due now.
bool build_row(InsertTarget* t, const EffectRow& row)
{
    const TimestampTz now = GetCurrentTransactionStartTimestamp();
    const TimestampTz not_before = row.not_before.is_null ? now : DatumGetTimestampTz(row.not_before.datum);
    clear_row(t);
    set_column(t, kScope, text_of(row.scope));
    set_column(t, kKey, text_of(row.key));
    set_column(t, kKind, text_of(row.kind));
    set_column(t, kPayload, DirectFunctionCall1(jsonb_in, CStringGetDatum(row.payload.c_str())));
    set_column(t, kState, CStringGetTextDatum("pending"));
    set_column(t, kNotBefore, TimestampTzGetDatum(not_before));
    set_column(t, kAttempts, Int32GetDatum(0));
    set_column(t, kMaxAttempts, Int32GetDatum(row.max_attempts));
    set_column(t, kUncertain, BoolGetDatum(false));
    set_column(t, kRecordedAt, TimestampTzGetDatum(now));
    set_column(t, kLane, Int32GetDatum(row.lane));
    ExecStoreVirtualTuple(t->slot);
    if (needs_constraint_check(*t))
        ExecConstraints(t->rri, t->slot, t->estate);
    return not_before <= now;
}

EffectInsert effect_row(const EffectRow& row)
{
    EffectInsert out;
    if (!row.not_before.is_null && row.not_before.type != TIMESTAMPTZOID)
        return out;
    const Oid relid = table_for_direct_insert("effects");
    if (!OidIsValid(relid))
        return out;
    MemoryContext const caller = CurrentMemoryContext;
    int at[kColumnCount];
    InsertTarget t{};
    t.at = at;
    t.search_path_pinned = row.search_path_pinned;
    if (!open_target(relid, kColumns, kColumnCount, true, kScope, kKey, &t))
        return out;
    const Datum scope = text_of(row.scope);
    const Datum key = text_of(row.key);
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        const Conflict conflict = find_conflict(&t, kScope, scope, kKey, key, false);
        if (conflict == Conflict::kGone)
            continue;
        if (conflict == Conflict::kFound) {
            out.outcome = EffectInsert::Outcome::kExists;
            break;
        }
        out.due = build_row(&t, row);
        if (insert_speculatively(&t)) {
            out.outcome = EffectInsert::Outcome::kInserted;
            break;
        }
    }
    close_target(caller, &t);
    // As SPI after a statement: what was written is visible to the next.
    if (out.outcome == EffectInsert::Outcome::kInserted)
        CommandCounterIncrement();
    return out;
}

}  // namespace

EffectInsert insert_effect_row(const EffectRow& row)
{
    return pg_call([&]() noexcept { return effect_row(row); });
}

}  // namespace pg_idempotent::pg
