#include "pg_native/key_row_insert.hpp"

#include <cstring>

#include "core/md5.hpp"
#include "pg/compat.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
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

// idem.keys as released (pg_idempotent--0.1.0.sql): name and type of every
// column. Any other shape (a column added, a default) and the caller's SQL
// runs instead, which knows the defaults.
enum Column {
    kScope,
    kKeyHash,
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
    kColumnCount
};

struct ColumnSpec {
    const char* name;
    Oid type;
};

const ColumnSpec kColumns[kColumnCount] = {
    {"scope", TEXTOID},          {"key_hash", UUIDOID},         {"key", TEXTOID},
    {"fingerprint", TEXTOID},    {"state", TEXTOID},            {"result", JSONBOID},
    {"recovery_point", TEXTOID}, {"lease", INTERVALOID},        {"claimed_at", TIMESTAMPTZOID},
    {"completed_at", TIMESTAMPTZOID}, {"lease_until", TIMESTAMPTZOID}, {"claimed_by", XID8OID},
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
        int found = -1;
        for (int c = 0; c < kColumnCount; ++c) {
            if (strcmp(NameStr(att->attname), kColumns[c].name) == 0)
                found = c;
        }
        if (found < 0 || at[found] >= 0 || att->atttypid != kColumns[found].type || att->atthasdef ||
            att->attidentity != '\0' || att->attgenerated != '\0')
            return false;
        at[found] = i;
    }
    return live == kColumnCount;
}

// The arbiters ON CONFLICT (scope, key_hash) would infer: every valid,
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
        const AttrNumber hash = static_cast<AttrNumber>(at[kKeyHash] + 1);
        if (!((a == scope && b == hash) || (a == hash && b == scope)))
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
};

Datum text_datum(const std::string& s)
{
    return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
}

// Everything below runs inside one pg_call: plain PostgreSQL calls, no C++
// object with a destructor.
RawResult claim_row(const KeyClaim& claim)
{
    RawResult out{KeyClaimResult::Outcome::kUnsupported, nullptr, nullptr, false, false, true};
    // SERIALIZABLE: the SQL path's statements take the predicate locks. A
    // read-only transaction (or a hot standby): the INSERT raises 25006.
    if (!ActiveSnapshotSet() || IsolationIsSerializable() || XactReadOnly || IsInParallelMode())
        return out;
    const Oid ns = get_namespace_oid("idem", true);
    const Oid relid = OidIsValid(ns) ? get_relname_relid("keys", ns) : InvalidOid;
    if (!OidIsValid(relid))
        return out;
    // The statements would need both privileges of the current user (the
    // SQL path reports it if one is missing).
    if (pg_class_aclmask(relid, GetUserId(), ACL_INSERT | ACL_SELECT, ACLMASK_ALL) != (ACL_INSERT | ACL_SELECT))
        return out;

    MemoryContext const caller = CurrentMemoryContext;
    Relation rel = table_open(relid, RowExclusiveLock);
    int at[kColumnCount];
    if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != nullptr || rel->rd_rel->relrowsecurity ||
        !map_columns(RelationGetDescr(rel), at)) {
        table_close(rel, NoLock);
        return out;
    }

    // An executor state of one result relation, as logical replication's
    // apply worker builds it (no plan).
    EState* estate = CreateExecutorState();
    MemoryContextSwitchTo(estate->es_query_cxt);
    compat::init_insert_range_table(estate, relid, rel->rd_rel->relkind, RowExclusiveLock);
    ResultRelInfo* rri = makeNode(ResultRelInfo);
    InitResultRelInfo(rri, rel, 1, nullptr, 0);
    ExecOpenIndices(rri, true);
    List* arbiters = arbiter_indexes(rri, at);
    if (arbiters == NIL) {
        ExecCloseIndices(rri);
        MemoryContextSwitchTo(caller);
        FreeExecutorState(estate);
        table_close(rel, NoLock);
        return out;
    }
    TupleDesc desc = RelationGetDescr(rel);
    TupleTableSlot* slot = ExecInitExtraTupleSlot(estate, desc, table_slot_callbacks(rel));
    TupleTableSlot* found = ExecInitExtraTupleSlot(estate, desc, table_slot_callbacks(rel));

    // key_hash: md5(key)::uuid, the 16 bytes of the digest (core::md5: the
    // same digest as SQL's md5(), without OpenSSL's per-call setup).
    auto* hash = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    core::md5(claim.key.data(), claim.key.size(), hash->data);
    const Datum scope = text_datum(claim.scope);
    const Datum key = text_datum(claim.key);

    for (;;) {
        CHECK_FOR_INTERRUPTS();
        ExecClearTuple(slot);
        for (int i = 0; i < desc->natts; ++i)
            slot->tts_isnull[i] = true;
        slot->tts_values[at[kScope]] = scope;
        slot->tts_isnull[at[kScope]] = false;
        slot->tts_values[at[kKeyHash]] = UUIDPGetDatum(hash);
        slot->tts_isnull[at[kKeyHash]] = false;
        ExecStoreVirtualTuple(slot);

        // Waits for an open transaction that holds a conflicting row; false
        // with its TID when a committed (or this transaction's) row is there.
        ItemPointerData conflict;
        if (!compat::check_index_constraints(rri, slot, estate, &conflict, arbiters)) {
            SnapshotData dirty;
            InitDirtySnapshot(dirty);
            // Deleted or replaced since (a forget, a takeover): look again.
            if (!table_tuple_fetch_row_version(rel, &conflict, &dirty, found))
                continue;
            // As ON CONFLICT DO NOTHING: under REPEATABLE READ a conflicting
            // row this snapshot cannot see fails the transaction.
            if (IsolationUsesXactSnapshot() && !table_tuple_satisfies_snapshot(rel, found, GetActiveSnapshot())) {
                bool isnull = false;
                const Datum xmin = slot_getsysattr(found, MinTransactionIdAttributeNumber, &isnull);
                if (!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
                    ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                                    errmsg("could not serialize access due to concurrent update")));
            }
            bool isnull = false;
            MemoryContextSwitchTo(caller);
            const Datum state = slot_getattr(found, at[kState] + 1, &isnull);
            out.state = isnull ? pstrdup("") : text_to_cstring(DatumGetTextPP(state));
            const Datum fingerprint = slot_getattr(found, at[kFingerprint] + 1, &isnull);
            out.fingerprint = isnull ? nullptr : text_to_cstring(DatumGetTextPP(fingerprint));
            const Datum claimed_by = slot_getattr(found, at[kClaimedBy] + 1, &isnull);
            const FullTransactionId mine = GetTopFullTransactionIdIfAny();
            out.mine = !isnull && FullTransactionIdIsValid(mine) &&
                       FullTransactionIdEquals(DatumGetFullTransactionId(claimed_by), mine);
            const Datum lease_until = slot_getattr(found, at[kLeaseUntil] + 1, &isnull);
            out.lease_live = !isnull && DatumGetTimestampTz(lease_until) > GetCurrentTimestamp();
            // The row was found by md5(key): it is this key's only if the
            // stored key is this one, byte for byte.
            const Datum stored = slot_getattr(found, at[kKey] + 1, &isnull);
            if (isnull) {
                out.same_key = false;
            } else {
                const text* t = DatumGetTextPP(stored);
                out.same_key = VARSIZE_ANY_EXHDR(t) == claim.key.size() &&
                               std::memcmp(VARDATA_ANY(t), claim.key.data(), claim.key.size()) == 0;
            }
            MemoryContextSwitchTo(estate->es_query_cxt);
            out.outcome = KeyClaimResult::Outcome::kExists;
            break;
        }

        // No such key: the row claim's SQL writes, the transaction id
        // assigned only now.
        ExecClearTuple(slot);
        for (int i = 0; i < desc->natts; ++i)
            slot->tts_isnull[i] = true;
        auto set = [&](Column c, Datum value) {
            slot->tts_values[at[c]] = value;
            slot->tts_isnull[at[c]] = false;
        };
        set(kScope, scope);
        set(kKeyHash, UUIDPGetDatum(hash));
        set(kKey, key);
        if (claim.fingerprint)
            set(kFingerprint, text_datum(*claim.fingerprint));
        if (claim.lease) {
            const Datum lease = DirectFunctionCall3(interval_in, CStringGetDatum(claim.lease->c_str()),
                                                    ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
            set(kState, CStringGetTextDatum("in_progress"));
            set(kLease, lease);
            set(kLeaseUntil, DirectFunctionCall2(timestamptz_pl_interval,
                                                 TimestampTzGetDatum(GetCurrentTimestamp()), lease));
        } else {
            set(kState, CStringGetTextDatum("done"));
        }
        set(kClaimedAt, TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()));
        set(kClaimedBy, FullTransactionIdGetDatum(GetTopFullTransactionId()));
        ExecStoreVirtualTuple(slot);
        if (rel->rd_att->constr != nullptr)
            ExecConstraints(rri, slot, estate);

        // ExecInsert's speculative insertion: if a concurrent claimer
        // inserted the key between the check and the index insertion, our
        // row is killed and the loop checks again (waiting for it).
        estate->es_output_cid = GetCurrentCommandId(true);
        const uint32 token = SpeculativeInsertionLockAcquire(GetCurrentTransactionId());
        table_tuple_insert_speculative(rel, slot, estate->es_output_cid, 0, nullptr, token);
        bool spec_conflict = false;
        List* recheck = compat::insert_index_tuples_speculative(rri, slot, estate, &spec_conflict, arbiters);
        table_tuple_complete_speculative(rel, slot, token, !spec_conflict);
        SpeculativeInsertionLockRelease(GetCurrentTransactionId());
        list_free(recheck);
        if (!spec_conflict) {
            out.outcome = KeyClaimResult::Outcome::kInserted;
            break;
        }
    }

    ExecCloseIndices(rri);
    ExecResetTupleTable(estate->es_tupleTable, false);
    MemoryContextSwitchTo(caller);
    FreeExecutorState(estate);
    table_close(rel, NoLock);
    // As SPI after a statement: what was written is visible to the next.
    if (out.outcome == KeyClaimResult::Outcome::kInserted)
        CommandCounterIncrement();
    return out;
}

}  // namespace

KeyClaimResult insert_claim_row(const KeyClaim& claim)
{
    const RawResult raw = pg_call([&]() noexcept { return claim_row(claim); });
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
    return result;
}

}  // namespace pg_idempotent::pg
