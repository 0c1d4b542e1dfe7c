#include "pg_native/key_row_insert.hpp"

#include <cstring>

#include "core/key_id.hpp"
#include "pg/compat.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"
}

namespace pg_idempotent::pg {

namespace {

// idem.keys as released in 0.8.0 (pg_idempotent--0.1.0.sql, then key_hash
// dropped and token and long_key added by the 0.7.0 -> 0.8.0 script): name
// and type of every column, in table order. Any other shape (an earlier
// release's before ALTER EXTENSION ... UPDATE, a column added, a default)
// and the caller's SQL runs instead, which knows them.
enum Column {
    kScope,
    kKey,
    kFingerprint,
    kState,
    kResult,
    kRecoveryPoint,
    kLease,
    kClaimedAt,
    kCompletedAt,
    kLeaseUntil,
    kClaimedBy,
    kToken,
    kLongKey,
    kColumnCount
};

struct ColumnSpec {
    const char* name;
    Oid type;
};

const ColumnSpec kColumns[kColumnCount] = {
    {"scope", TEXTOID},
    {"key", TEXTOID},
    {"fingerprint", TEXTOID},
    {"state", TEXTOID},
    {"result", JSONBOID},
    {"recovery_point", TEXTOID},
    {"lease", INTERVALOID},
    {"claimed_at", TIMESTAMPTZOID},
    {"completed_at", TIMESTAMPTZOID},
    {"lease_until", TIMESTAMPTZOID},
    {"claimed_by", XID8OID},
    {"token", INT8OID},
    {"long_key", TEXTOID},
};

// Index into the tuple descriptor of each column; false unless the table has
// exactly the released columns, none with a default, identity or generation.
bool map_columns(TupleDesc desc, int* at)
{
    int live = 0;
    for (int c = 0; c < kColumnCount; ++c)
        at[c] = -1;
    for (int i = 0; i < desc->natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        if (att->attisdropped)
            continue;
        ++live;
        // The released order first (one comparison per column on every
        // claim), then any other.
        int found = -1;
        if (live - 1 < kColumnCount && strcmp(NameStr(att->attname), kColumns[live - 1].name) == 0) {
            found = live - 1;
        } else {
            for (int c = 0; c < kColumnCount && found < 0; ++c) {
                if (strcmp(NameStr(att->attname), kColumns[c].name) == 0)
                    found = c;
            }
        }
        if (found < 0 || at[found] >= 0 || att->atttypid != kColumns[found].type || att->atthasdef ||
            att->attidentity != '\0' || att->attgenerated != '\0')
            return false;
        at[found] = i;
    }
    return live == kColumnCount;
}

// The arbiters ON CONFLICT (scope, key) would infer: every valid,
// immediate unique index on exactly those two columns, without expressions
// or predicate. NIL (the SQL path) if there is none or one is deferrable.
List* arbiter_indexes(ResultRelInfo* rri, const int* at)
{
    List* arbiters = NIL;
    for (int i = 0; i < rri->ri_NumIndices; ++i) {
        Relation index = rri->ri_IndexRelationDescs[i];
        IndexInfo* info = rri->ri_IndexRelationInfo[i];
        if (!index->rd_index->indisunique || !index->rd_index->indisvalid)
            continue;
        if (info->ii_NumIndexKeyAttrs != 2 || info->ii_Expressions != NIL || info->ii_Predicate != NIL)
            continue;
        const AttrNumber a = info->ii_IndexAttrNumbers[0];
        const AttrNumber b = info->ii_IndexAttrNumbers[1];
        const AttrNumber scope = static_cast<AttrNumber>(at[kScope] + 1);
        const AttrNumber key = static_cast<AttrNumber>(at[kKey] + 1);
        if (!((a == scope && b == key) || (a == key && b == scope)))
            continue;
        if (!index->rd_index->indimmediate)
            return NIL;
        arbiters = lappend_oid(arbiters, RelationGetRelid(index));
    }
    return arbiters;
}

// What the lambda hands back: plain values, strings palloc'd in the
// caller's memory context.
struct RawResult {
    KeyClaimResult::Outcome outcome;
    char* state;
    char* fingerprint;  // nullptr: NULL
    bool mine;
    bool lease_live;
    bool same_key;
    bool has_token;
    int64 token;
};

Datum text_datum(const std::string& s)
{
    return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
}

// Everything below runs inside one pg_call: plain PostgreSQL calls, no C++
// object with a destructor.

// idem.keys, when this transaction may write it here exactly as the SQL path
// would; InvalidOid when the SQL path must run instead.
Oid keys_table_for_direct_insert()
{
    // SERIALIZABLE: the SQL path's statements take the predicate locks. A
    // read-only transaction (or a hot standby): the INSERT raises 25006.
    if (!ActiveSnapshotSet() || IsolationIsSerializable() || XactReadOnly || IsInParallelMode())
        return InvalidOid;
    const Oid ns = get_namespace_oid("idem", true);
    const Oid relid = OidIsValid(ns) ? get_relname_relid("keys", ns) : InvalidOid;
    if (!OidIsValid(relid))
        return InvalidOid;
    // The statements would need both privileges of the current user (the
    // SQL path reports it if one is missing).
    if (pg_class_aclmask(relid, GetUserId(), ACL_INSERT | ACL_SELECT, ACLMASK_ALL) != (ACL_INSERT | ACL_SELECT))
        return InvalidOid;
    return relid;
}

// idem.keys opened for the insert, with the executor state, the arbiter
// indexes and the two slots one claim works with.
struct ClaimTarget {
    Relation rel;
    int at[kColumnCount];
    EState* estate;
    ResultRelInfo* rri;
    List* arbiters;
    TupleTableSlot* slot;   // the row this claim would insert
    TupleTableSlot* found;  // the row already there
};

// The table opened and its columns mapped; false (the table closed again)
// when its shape is not the released one.
bool open_keys_table(Oid relid, ClaimTarget* t)
{
    t->rel = table_open(relid, RowExclusiveLock);
    if (t->rel->rd_rel->relkind != RELKIND_RELATION || t->rel->trigdesc != nullptr || t->rel->rd_rel->relrowsecurity ||
        !map_columns(RelationGetDescr(t->rel), t->at)) {
        table_close(t->rel, NoLock);
        return false;
    }
    return true;
}

// An executor state of one result relation, as logical replication's apply
// worker builds it (no plan), left current as the memory context. False
// (everything released, the caller's context current) without an arbiter.
bool start_executor(MemoryContext caller, ClaimTarget* t)
{
    t->estate = CreateExecutorState();
    MemoryContextSwitchTo(t->estate->es_query_cxt);
    compat::init_insert_range_table(t->estate, RelationGetRelid(t->rel), t->rel->rd_rel->relkind, RowExclusiveLock);
    t->rri = makeNode(ResultRelInfo);
    InitResultRelInfo(t->rri, t->rel, 1, nullptr, 0);
    ExecOpenIndices(t->rri, true);
    t->arbiters = arbiter_indexes(t->rri, t->at);
    if (t->arbiters == NIL) {
        ExecCloseIndices(t->rri);
        MemoryContextSwitchTo(caller);
        FreeExecutorState(t->estate);
        table_close(t->rel, NoLock);
        return false;
    }
    TupleDesc desc = RelationGetDescr(t->rel);
    t->slot = ExecInitExtraTupleSlot(t->estate, desc, table_slot_callbacks(t->rel));
    t->found = ExecInitExtraTupleSlot(t->estate, desc, table_slot_callbacks(t->rel));
    return true;
}

void finish_executor(MemoryContext caller, ClaimTarget* t)
{
    ExecCloseIndices(t->rri);
    ExecResetTupleTable(t->estate->es_tupleTable, false);
    MemoryContextSwitchTo(caller);
    FreeExecutorState(t->estate);
    table_close(t->rel, NoLock);
}

// The key's columns as datums, computed once for every round.
struct KeyDatums {
    Datum scope;
    Datum key;       // the primary key value (core::key_id)
    Datum long_key;  // the key, when key holds its digest; else 0
};

KeyDatums key_datums(const KeyClaim& claim, const std::string& id)
{
    const bool inline_key = core::key_is_inline(claim.key);
    return {text_datum(claim.scope), text_datum(id), inline_key ? Datum(0) : text_datum(claim.key)};
}

// The slot emptied: every column NULL until set_column.
void clear_row(TupleTableSlot* slot)
{
    ExecClearTuple(slot);
    for (int i = 0; i < slot->tts_tupleDescriptor->natts; ++i)
        slot->tts_isnull[i] = true;
}

void set_column(ClaimTarget* t, Column c, Datum value)
{
    t->slot->tts_values[t->at[c]] = value;
    t->slot->tts_isnull[t->at[c]] = false;
}

// As ON CONFLICT DO NOTHING: under REPEATABLE READ a conflicting row this
// snapshot cannot see fails the transaction.
void require_visible_conflict(const ClaimTarget& t)
{
    if (!IsolationUsesXactSnapshot() || table_tuple_satisfies_snapshot(t.rel, t.found, GetActiveSnapshot()))
        return;
    bool isnull = false;
    const Datum xmin = slot_getsysattr(t.found, MinTransactionIdAttributeNumber, &isnull);
    if (!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to concurrent update"),
                        errhint("The transaction might succeed if retried.")));
}

enum class Conflict { kNone, kFound, kGone };

// Whether a row holds the key's (scope, key): kFound with it in
// t->found. Waits for an open transaction that holds a conflicting row.
// kGone: the conflicting row was deleted or replaced since (a forget, a
// takeover), so look again.
Conflict find_conflict(ClaimTarget* t, const KeyDatums& k)
{
    clear_row(t->slot);
    set_column(t, kScope, k.scope);
    set_column(t, kKey, k.key);
    ExecStoreVirtualTuple(t->slot);
    ItemPointerData conflict;
    if (compat::check_index_constraints(t->rri, t->slot, t->estate, &conflict, t->arbiters))
        return Conflict::kNone;
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    if (!table_tuple_fetch_row_version(t->rel, &conflict, &dirty, t->found))
        return Conflict::kGone;
    require_visible_conflict(*t);
    return Conflict::kFound;
}

// The columns of the row in t->found that claim decides on, copied into the
// caller's memory context.
void read_existing(const ClaimTarget& t, const KeyClaim& claim, MemoryContext caller, RawResult* out)
{
    bool isnull = false;
    MemoryContextSwitchTo(caller);
    const Datum state = slot_getattr(t.found, t.at[kState] + 1, &isnull);
    out->state = isnull ? pstrdup("") : text_to_cstring(DatumGetTextPP(state));
    const Datum fingerprint = slot_getattr(t.found, t.at[kFingerprint] + 1, &isnull);
    out->fingerprint = isnull ? nullptr : text_to_cstring(DatumGetTextPP(fingerprint));
    const Datum claimed_by = slot_getattr(t.found, t.at[kClaimedBy] + 1, &isnull);
    const FullTransactionId mine = GetTopFullTransactionIdIfAny();
    out->mine = !isnull && FullTransactionIdIsValid(mine) &&
                FullTransactionIdEquals(DatumGetFullTransactionId(claimed_by), mine);
    const Datum lease_until = slot_getattr(t.found, t.at[kLeaseUntil] + 1, &isnull);
    out->lease_live = !isnull && DatumGetTimestampTz(lease_until) > GetCurrentTimestamp();
    const Datum token = slot_getattr(t.found, t.at[kToken] + 1, &isnull);
    out->has_token = !isnull;
    out->token = isnull ? 0 : DatumGetInt64(token);
    // A row found by a digest is this key's only if the key it holds
    // (long_key, or key when that is NULL) is this one, byte for byte.
    Datum stored = slot_getattr(t.found, t.at[kLongKey] + 1, &isnull);
    if (isnull)
        stored = slot_getattr(t.found, t.at[kKey] + 1, &isnull);
    if (isnull) {
        out->same_key = false;
    } else {
        const text* stored_key = DatumGetTextPP(stored);
        out->same_key = VARSIZE_ANY_EXHDR(stored_key) == claim.key.size() &&
                        std::memcmp(VARDATA_ANY(stored_key), claim.key.data(), claim.key.size()) == 0;
    }
    MemoryContextSwitchTo(t.estate->es_query_cxt);
}

// The next fencing token, as nextval('idem.key_tokens') (run as the
// extension owner, who owns the sequence).
int64 next_token()
{
    const Oid ns = get_namespace_oid("idem", false);
    const Oid seq = get_relname_relid("key_tokens", ns);
    if (!OidIsValid(seq))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("sequence idem.key_tokens does not exist"),
                        errhint("Run ALTER EXTENSION pg_idempotent UPDATE: the sequence came with 0.8.0.")));
    return nextval_internal(seq, true);
}

// The row claim's SQL writes for a new key, the transaction id assigned
// only now, checked against the table's constraints. A leased claim draws
// its fencing token here, only once no conflicting row was found.
void build_new_row(ClaimTarget* t, const KeyClaim& claim, const KeyDatums& k, RawResult* out)
{
    clear_row(t->slot);
    set_column(t, kScope, k.scope);
    set_column(t, kKey, k.key);
    if (k.long_key != Datum(0))
        set_column(t, kLongKey, k.long_key);
    if (claim.fingerprint)
        set_column(t, kFingerprint, text_datum(*claim.fingerprint));
    if (claim.lease) {
        const Datum lease = DirectFunctionCall3(interval_in, CStringGetDatum(claim.lease->c_str()),
                                                ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
        set_column(t, kState, CStringGetTextDatum("in_progress"));
        set_column(t, kLease, lease);
        set_column(t, kLeaseUntil,
                   DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(GetCurrentTimestamp()), lease));
        if (!out->has_token) {
            out->token = next_token();
            out->has_token = true;
        }
        set_column(t, kToken, Int64GetDatum(out->token));
    } else {
        set_column(t, kState, CStringGetTextDatum("done"));
    }
    set_column(t, kClaimedAt, TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()));
    set_column(t, kClaimedBy, FullTransactionIdGetDatum(GetTopFullTransactionId()));
    ExecStoreVirtualTuple(t->slot);
    if (t->rel->rd_att->constr != nullptr)
        ExecConstraints(t->rri, t->slot, t->estate);
}

// ExecInsert's speculative insertion of t->slot: false when a concurrent
// claimer inserted the key between the check and the index insertion (our
// row is killed; the caller checks again, waiting for it).
bool insert_speculatively(ClaimTarget* t)
{
    t->estate->es_output_cid = GetCurrentCommandId(true);
    const uint32 token = SpeculativeInsertionLockAcquire(GetCurrentTransactionId());
    table_tuple_insert_speculative(t->rel, t->slot, t->estate->es_output_cid, 0, nullptr, token);
    bool spec_conflict = false;
    List* recheck = compat::insert_index_tuples_speculative(t->rri, t->slot, t->estate, &spec_conflict, t->arbiters);
    table_tuple_complete_speculative(t->rel, t->slot, token, !spec_conflict);
    SpeculativeInsertionLockRelease(GetCurrentTransactionId());
    list_free(recheck);
    return !spec_conflict;
}

RawResult claim_row(const KeyClaim& claim, const std::string& id)
{
    RawResult out{KeyClaimResult::Outcome::kUnsupported, nullptr, nullptr, false, false, true, false, 0};
    const Oid relid = keys_table_for_direct_insert();
    if (!OidIsValid(relid))
        return out;
    MemoryContext const caller = CurrentMemoryContext;
    ClaimTarget t{};
    if (!open_keys_table(relid, &t) || !start_executor(caller, &t))
        return out;
    const KeyDatums k = key_datums(claim, id);
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        const Conflict conflict = find_conflict(&t, k);
        if (conflict == Conflict::kGone)
            continue;
        if (conflict == Conflict::kFound) {
            out.has_token = false;
            read_existing(t, claim, caller, &out);
            out.outcome = KeyClaimResult::Outcome::kExists;
            break;
        }
        build_new_row(&t, claim, k, &out);
        if (insert_speculatively(&t)) {
            out.outcome = KeyClaimResult::Outcome::kInserted;
            break;
        }
    }
    finish_executor(caller, &t);
    // As SPI after a statement: what was written is visible to the next.
    if (out.outcome == KeyClaimResult::Outcome::kInserted)
        CommandCounterIncrement();
    return out;
}

}  // namespace

KeyClaimResult insert_claim_row(const KeyClaim& claim)
{
    // Computed here: core::key_id allocates (a std::string), which the
    // noexcept body must not.
    const std::string id = core::key_id(claim.key);
    const RawResult raw = pg_call([&]() noexcept { return claim_row(claim, id); });
    KeyClaimResult result;
    result.outcome = raw.outcome;
    if (raw.outcome == KeyClaimResult::Outcome::kExists) {
        result.existing.state = raw.state;
        if (raw.fingerprint != nullptr)
            result.existing.fingerprint = std::string(raw.fingerprint);
        result.existing.claimed_by_this_transaction = raw.mine;
        result.existing.lease_live = raw.lease_live;
        result.existing.same_key = raw.same_key;
    }
    if (raw.has_token)
        result.token = raw.token;
    return result;
}

}  // namespace pg_idempotent::pg
