#include "pg_native/key_row_insert.hpp"

#include <cstring>

#include "core/key_id.hpp"
#include "pg/compat.hpp"
#include "pg/guard.hpp"
#include "pg_native/speculative_insert.hpp"

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

Datum datum_of(const std::string& s)
{
    return text_datum(s.data(), s.size());
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
    return {datum_of(claim.scope), datum_of(id), inline_key ? Datum(0) : datum_of(claim.key)};
}

// The columns of the row in t->found that claim decides on, copied into the
// caller's memory context.
void read_existing(const InsertTarget& t, const KeyClaim& claim, MemoryContext caller, RawResult* out)
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
    MemoryContextSwitchTo(t.call);
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
void build_new_row(InsertTarget* t, const KeyClaim& claim, const KeyDatums& k, RawResult* out)
{
    clear_row(t);
    set_column(t, kScope, k.scope);
    set_column(t, kKey, k.key);
    if (k.long_key != Datum(0))
        set_column(t, kLongKey, k.long_key);
    if (claim.fingerprint)
        set_column(t, kFingerprint, datum_of(*claim.fingerprint));
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

RawResult claim_row(const KeyClaim& claim, const std::string& id)
{
    RawResult out{KeyClaimResult::Outcome::kUnsupported, nullptr, nullptr, false, false, true, false, 0};
    const Oid relid = table_for_direct_insert("keys");
    if (!OidIsValid(relid))
        return out;
    MemoryContext const caller = CurrentMemoryContext;
    int at[kColumnCount];
    InsertTarget t{};
    t.at = at;
    if (!open_target(relid, kColumns, kColumnCount, false, kScope, kKey, &t))
        return out;
    const KeyDatums k = key_datums(claim, id);
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        const Conflict conflict = find_conflict(&t, kScope, k.scope, kKey, k.key, true);
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
    close_target(caller, &t);
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