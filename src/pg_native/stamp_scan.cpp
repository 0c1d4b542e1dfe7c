#include "pg_native/stamp_scan.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

namespace pg_idempotent::pg {

namespace {

// Whether a visible row carries the stamp. A combo command id means this
// transaction also deleted or updated the row in a subtransaction that
// rolled back: not the bare stamp.
inline bool stamped_by(HeapTupleHeader h, TransactionId xmin, CommandId cmin)
{
    return HeapTupleHeaderGetRawXmin(h) == xmin && (h->t_infomask & HEAP_COMBOCID) == 0 &&
           HeapTupleHeaderGetRawCommandId(h) == cmin;
}

// Whether a tuple is visible to the snapshot, decided from its header alone
// when the stamp's writer settles it; else by HeapTupleSatisfiesVisibility.
//
// writer_settled: the stamp's xmin committed and is in the snapshot's past
// (checked once per scan). Then, as HeapTupleSatisfiesMVCC would decide:
// - a tuple that transaction inserted (raw xmin, hinted, unhinted or
//   frozen) is visible while its xmax is invalid or only a lock;
// - a tuple that transaction deleted (raw xmax, not a multixact, not a
//   lock) is not visible.
// These are the rows the recorded write inserted and deleted, which is
// nearly every row of the partition right after the write. Deciding them
// here sets no hint bit, so the first rerun after a write dirties no page
// of the partition (a plain read sets the hints on all of them); every
// other tuple goes through HeapTupleSatisfiesVisibility.
inline bool visible_to(HeapTuple tuple, Snapshot snapshot, Buffer buffer, TransactionId writer, bool writer_settled)
{
    if (writer_settled) {
        const HeapTupleHeader h = tuple->t_data;
        if (HeapTupleHeaderGetRawXmin(h) == writer &&
            ((h->t_infomask & HEAP_XMAX_INVALID) != 0 || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask)))
            return true;
        if (HeapTupleHeaderGetRawXmax(h) == writer && (h->t_infomask & HEAP_XMAX_INVALID) == 0 &&
            (h->t_infomask & HEAP_XMAX_IS_MULTI) == 0 && !HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
            return false;
    }
    return HeapTupleSatisfiesVisibility(tuple, snapshot, buffer);
}

// Pins a page of rel and asks the CPU for its memory, without waiting for it
// (no lock is needed for a prefetch: nothing is read yet).
Buffer read_ahead(Relation rel, BlockNumber block, BufferAccessStrategy strategy)
{
    const Buffer buffer = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
    const char* page = static_cast<const char*>(BufferGetPage(buffer));
    // The page header and the first line pointers only: the rest of a page
    // read through the ring is in the cache already (the kernel has just
    // copied it), so asking for it costs more than it saves.
    for (int at = 0; at < 3 * 64; at += 64)
        __builtin_prefetch(page + at);
    return buffer;
}

// Plain PostgreSQL code (run under pg_call): nothing here has a destructor,
// and an ERROR (a cancel, a read error) ends the scan through the abort,
// which closes the relation and releases the snapshot and the buffers.
//
// What a sequential scan does (heapgetpage): each page under a share lock,
// each line pointer's tuple checked against the snapshot (all of them at
// once on an all-visible page; see visible_to), the serializable-conflict
// checks and the relation's predicate lock of SERIALIZABLE, a ring of
// buffers for a table larger than a quarter of shared_buffers. One thing left out: the
// opportunistic pruning of each page (heap_page_prune_opt). A rerun right
// after a rewrite would otherwise prune the dead rows the rewrite left, page
// by page, and write WAL for it (megabytes for a million rows): pruning is
// left to the next VACUUM or to other readers, so that an identical rerun
// writes nothing.
bool scan(Oid relid, TransactionId xmin, CommandId cmin, StampCount* out)
{
    Relation rel = table_open(relid, AccessShareLock);
    if (rel->rd_rel->relam != HEAP_TABLE_AM_OID || check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED) {
        table_close(rel, AccessShareLock);
        return false;
    }
    Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
    PredicateLockRelation(rel, snapshot);
    // The commit log is asked only for a writer no older than the table's
    // relfrozenxid: the log below the oldest relfrozenxid of the cluster may
    // be truncated already (asking would fail), and a writer older than
    // relfrozenxid has had all its rows here frozen, which the hint bits
    // HeapTupleSatisfiesVisibility reads already say.
    const bool writer_settled = TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin) &&
                                !TransactionIdPrecedes(xmin, rel->rd_rel->relfrozenxid) &&
                                !XidInMVCCSnapshot(xmin, snapshot) && TransactionIdDidCommit(xmin);
    const BlockNumber blocks = RelationGetNumberOfBlocks(rel);
    BufferAccessStrategy strategy =
        blocks > static_cast<BlockNumber>(NBuffers / 4) ? GetAccessStrategy(BAS_BULKREAD) : nullptr;
    uint64 rows = 0;
    uint64 stamped = 0;
    // Asked for once: the serializable-conflict check does nothing outside
    // SERIALIZABLE (it returns at once), and a million calls to learn that
    // cost about a tenth of the scan of a cached 1M-row table.
    const bool serializable = IsolationIsSerializable();
    // Each page is pinned, and its memory asked for, one page ahead: a rerun
    // touches each page once, so its lines are cold in the CPU's caches, and
    // fetching them while the page before is counted hides most of that
    // wait.
    Buffer next = blocks > 0 ? read_ahead(rel, 0, strategy) : InvalidBuffer;
    for (BlockNumber block = 0; block < blocks; ++block) {
        CHECK_FOR_INTERRUPTS();
        const Buffer buffer = next;
        next = block + 1 < blocks ? read_ahead(rel, block + 1, strategy) : InvalidBuffer;
        LockBuffer(buffer, BUFFER_LOCK_SHARE);
        const Page page = BufferGetPage(buffer);
        const bool all_visible = PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
        const OffsetNumber last = PageGetMaxOffsetNumber(page);
        for (OffsetNumber offset = FirstOffsetNumber; offset <= last; offset = OffsetNumberNext(offset)) {
            const ItemId item = PageGetItemId(page, offset);
            if (!ItemIdIsNormal(item))
                continue;
            HeapTupleData tuple;
            tuple.t_tableOid = RelationGetRelid(rel);
            tuple.t_data = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
            tuple.t_len = ItemIdGetLength(item);
            ItemPointerSet(&tuple.t_self, block, offset);
            const bool visible = all_visible || visible_to(&tuple, snapshot, buffer, xmin, writer_settled);
            if (serializable)
                HeapCheckForSerializableConflictOut(visible, rel, &tuple, buffer, snapshot);
            if (!visible)
                continue;
            ++rows;
            if (stamped_by(tuple.t_data, xmin, cmin))
                ++stamped;
        }
        LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
        ReleaseBuffer(buffer);
    }
    if (strategy != nullptr)
        FreeAccessStrategy(strategy);
    UnregisterSnapshot(snapshot);
    table_close(rel, AccessShareLock);
    out->rows = rows;
    out->stamped = stamped;
    return true;
}

}  // namespace

std::optional<StampCount> count_stamped_rows(std::uint32_t relation, std::uint32_t xmin, std::uint32_t cmin)
{
    StampCount count;
    StampCount* out = &count;
    const bool done = pg_call([&]() noexcept { return scan(relation, xmin, cmin, out); });
    if (!done)
        return std::nullopt;
    return count;
}

}  // namespace pg_idempotent::pg
