#include "pg_native/row_digest_receiver.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
}

namespace pg_idempotent::pg {

namespace {

// What the per-row loop needs of one live column, read once at startup.
struct ColumnInfo {
    int index;  // into the slot's values / isnull
    int16 typlen;
    bool typbyval;
};

struct RowDigestReceiver {
    DestReceiver pub;  // first, so the executor can treat us as a DestReceiver
    DigestTargets targets;
    std::uint64_t rows;         // sent so far
    MemoryContext context;      // the column array, and row_context below
    MemoryContext row_context;  // detoasted copies live here for one row
    ColumnInfo* columns;        // the live columns, in attnum order
    int live;                   // how many
    int first_live;             // how many of them are before targets.split (all when split is 0)
    int natts;                  // of the descriptor the columns were read from
    int hashed_natts;           // natts less targets.tail
    Relation store;             // targets.store_into, open while rows come
    BulkInsertState bulk;
    CommandId command;
};

// The table rows are stored into must have exactly the statement's columns:
// the slots are inserted as they come.
void open_store(RowDigestReceiver* r, TupleDesc typeinfo)
{
    r->store = table_open(r->targets.store_into, RowExclusiveLock);
    TupleDesc stored = RelationGetDescr(r->store);
    bool same = stored->natts == typeinfo->natts;
    for (int i = 0; same && i < stored->natts; ++i)
        same = TupleDescAttr(stored, i)->atttypid == TupleDescAttr(typeinfo, i)->atttypid &&
               !TupleDescAttr(stored, i)->attisdropped;
    if (!same)
        elog(ERROR, "row digest receiver: relation %u does not have the statement's columns", r->targets.store_into);
    r->bulk = GetBulkInsertState();
    r->command = GetCurrentCommandId(true);
}

void receiver_startup(DestReceiver* self, int, TupleDesc typeinfo)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    r->context = AllocSetContextCreate(CurrentMemoryContext, "pg_idempotent row image", ALLOCSET_SMALL_SIZES);
    r->row_context = AllocSetContextCreate(r->context, "pg_idempotent row image copies", ALLOCSET_DEFAULT_SIZES);
    const int natts = typeinfo->natts;
    r->columns = static_cast<ColumnInfo*>(
        MemoryContextAlloc(r->context, sizeof(ColumnInfo) * static_cast<std::size_t>(natts > 0 ? natts : 1)));
    r->live = 0;
    r->first_live = 0;
    r->natts = natts;
    r->rows = 0;
    const int tail = r->targets.tail;
    if (tail < 0 || tail > natts)
        elog(ERROR, "row digest receiver: %d trailing columns of %d", tail, natts);
    for (int i = natts - tail; i < natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(typeinfo, i);
        if (att->attisdropped || att->attlen != 4 || !att->attbyval)
            elog(ERROR, "row digest receiver: trailing column %d is not a 4-byte value", i + 1);
    }
    r->hashed_natts = natts - tail;
    const int split = r->targets.split > 0 ? r->targets.split : r->hashed_natts;
    for (int i = 0; i < r->hashed_natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(typeinfo, i);
        if (att->attisdropped)
            continue;  // never part of a row's image
        r->columns[r->live++] = ColumnInfo{i, att->attlen, att->attbyval};
        if (i < split)
            r->first_live = r->live;
    }
    if (r->targets.store_into != 0)
        open_store(r, typeinfo);
}

// Hashes columns [from, to) of r->columns of the slot's values as one row.
// Sets *copied when it allocated in the current context (see
// feed_column_image).
//
// The digest is returned by value: written through a pointer, its halves
// would be stored apart and read back as one 16-byte load, which the CPU
// cannot forward from two stores (a stall on every row). r->columns and the
// flag are kept in locals because every byte the hasher stores may alias
// them, which would make the compiler read and write them again for each
// column (bench/README.md has the measurement).
inline core::Digest128 hash_columns(RowDigestReceiver* r, const Datum* values, const bool* isnull, int from, int to,
                                    bool* copied)
{
    core::RowHasher* h = r->targets.hasher;
    const ColumnInfo* const columns = r->columns;
    bool allocated = false;
    h->begin_row(static_cast<uint32>(to - from));
    for (int k = from; k < to; ++k) {
        const ColumnInfo& c = columns[k];
        allocated |= feed_column_image(h, values[c.index], isnull[c.index], c.typlen, c.typbyval);
    }
    const core::Digest128 row = h->end_row();
    if (!h->ok())
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory hashing a row"),
                        errhint("Give the server more memory.")));
    *copied |= allocated;
    return row;
}

// Called by the executor for every row: no C++ object lives in this frame, and
// the core calls are noexcept, so an ERROR from detoasting unwinds cleanly.
// Returning false ends the query (the executor sends no more rows).
bool receiver_receive(TupleTableSlot* slot, DestReceiver* self)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    if (slot->tts_tupleDescriptor->natts != r->natts)
        elog(ERROR, "row digest receiver: %d columns expected, got %d", r->natts, slot->tts_tupleDescriptor->natts);
    slot_getallattrs(slot);

    const DigestTargets& t = r->targets;
    const Datum* values = slot->tts_values;
    const bool* isnull = slot->tts_isnull;
    MemoryContext old = MemoryContextSwitchTo(r->row_context);
    bool copied = false;
    const core::Digest128 row = hash_columns(r, values, isnull, 0, r->first_live, &copied);
    if (t.second != nullptr)
        t.second->add(hash_columns(r, values, isnull, r->first_live, r->live, &copied));
    MemoryContextSwitchTo(old);
    if (copied)
        MemoryContextReset(r->row_context);
    t.digest->add(row);
    if (t.sample != nullptr)
        t.sample->add(row);
    if (r->store != nullptr)
        table_tuple_insert(r->store, slot, r->command, TABLE_INSERT_SKIP_FSM, r->bulk);
    if (t.tail > 0 && r->rows == 0) {
        for (int i = 0; i < t.tail; ++i)
            t.first_row_tail[i] = isnull[r->hashed_natts + i] ? 0 : DatumGetUInt32(values[r->hashed_natts + i]);
        *t.got_first_row = true;
    }
    if (++r->rows > t.max_rows || (t.check != nullptr && t.check->excludes(row))) {
        if (t.stopped != nullptr)
            *t.stopped = true;
        return false;
    }
    return true;
}

void receiver_shutdown(DestReceiver* self)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    if (r->store != nullptr) {
        FreeBulkInsertState(r->bulk);
        table_finish_bulk_insert(r->store, TABLE_INSERT_SKIP_FSM);
        table_close(r->store, NoLock);
        r->store = nullptr;
    }
    if (r->context != nullptr) {
        MemoryContextDelete(r->context);  // and row_context, its child
        r->context = nullptr;
        r->row_context = nullptr;
        r->columns = nullptr;
    }
}

void receiver_destroy(DestReceiver* self)
{
    pfree(self);
}

}  // namespace

DestReceiver* make_row_digest_receiver(const DigestTargets& targets)
{
    auto* r = static_cast<RowDigestReceiver*>(palloc0(sizeof(RowDigestReceiver)));
    r->pub.receiveSlot = receiver_receive;
    r->pub.rStartup = receiver_startup;
    r->pub.rShutdown = receiver_shutdown;
    r->pub.rDestroy = receiver_destroy;
    // Any mode but DestNone/DestSPI: SPI then reports SPI_OK_SELECT and leaves
    // the rows to us (plpgsql's RETURN QUERY does the same with a tuplestore).
    r->pub.mydest = DestTuplestore;
    r->targets = targets;
    return &r->pub;
}

}  // namespace pg_idempotent::pg
