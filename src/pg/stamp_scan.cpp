#include "pg/stamp_scan.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

namespace pg_idempotent::pg {

namespace {

// Plain PostgreSQL code (run under pg_call): nothing here has a destructor,
// and an ERROR (a cancel, a read error) ends the scan through the abort,
// which closes the relation and releases the snapshot and the buffers.
bool scan(Oid relid, TransactionId xmin, CommandId cmin, StampCount* out)
{
    Relation rel = table_open(relid, AccessShareLock);
    if (rel->rd_rel->relam != HEAP_TABLE_AM_OID || check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED) {
        table_close(rel, AccessShareLock);
        return false;
    }
    Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
    uint64 rows = 0;
    uint64 stamped = 0;
    HeapTuple tuple;
    while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
        const HeapTupleHeader h = tuple->t_data;
        ++rows;
        // A combo command id means this transaction also deleted or updated
        // the row in a subtransaction that rolled back: not the bare stamp.
        if (HeapTupleHeaderGetRawXmin(h) == xmin && (h->t_infomask & HEAP_COMBOCID) == 0 &&
            HeapTupleHeaderGetRawCommandId(h) == cmin)
            ++stamped;
        if ((rows & 0xFFFF) == 0)
            CHECK_FOR_INTERRUPTS();
    }
    table_endscan(scan);
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
    const bool done = pg_call([&] { return scan(relation, xmin, cmin, out); });
    if (!done)
        return std::nullopt;
    return count;
}

}  // namespace pg_idempotent::pg
