#include "pg/row_digest_receiver.hpp"

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
    core::RowHasher* hasher;
    core::MultisetDigest* digest;
    MemoryContext context;      // the column array, and row_context below
    MemoryContext row_context;  // detoasted copies live here for one row
    ColumnInfo* columns;        // the live columns, in attnum order
    int live;                   // how many
    int natts;                  // of the descriptor the columns were read from
};

void receiver_startup(DestReceiver* self, int, TupleDesc typeinfo)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    r->context = AllocSetContextCreate(CurrentMemoryContext, "pg_idempotent row image",
                                       ALLOCSET_SMALL_SIZES);
    r->row_context = AllocSetContextCreate(r->context, "pg_idempotent row image copies",
                                           ALLOCSET_DEFAULT_SIZES);
    const int natts = typeinfo->natts;
    r->columns = static_cast<ColumnInfo*>(
        MemoryContextAlloc(r->context, sizeof(ColumnInfo) * static_cast<std::size_t>(natts > 0 ? natts : 1)));
    r->live = 0;
    r->natts = natts;
    for (int i = 0; i < natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(typeinfo, i);
        if (att->attisdropped)
            continue;  // never part of a row's image
        r->columns[r->live++] = ColumnInfo{i, att->attlen, att->attbyval};
    }
}

// Called by the executor for every row: no C++ object lives in this frame, and
// the core calls are noexcept, so an ERROR from detoasting unwinds cleanly.
bool receiver_receive(TupleTableSlot* slot, DestReceiver* self)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    if (slot->tts_tupleDescriptor->natts != r->natts)
        elog(ERROR, "row digest receiver: %d columns expected, got %d", r->natts,
             slot->tts_tupleDescriptor->natts);
    slot_getallattrs(slot);

    core::RowHasher* h = r->hasher;
    const Datum* values = slot->tts_values;
    const bool* isnull = slot->tts_isnull;
    MemoryContext old = MemoryContextSwitchTo(r->row_context);
    bool copied = false;
    h->begin_row(static_cast<uint32>(r->live));
    for (int k = 0; k < r->live; ++k) {
        const ColumnInfo& c = r->columns[k];
        copied |= feed_column_image(h, values[c.index], isnull[c.index], c.typlen, c.typbyval);
    }
    const core::Digest128 row = h->end_row();
    MemoryContextSwitchTo(old);
    if (!h->ok())
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory hashing a row")));
    r->digest->add(row);
    if (copied)
        MemoryContextReset(r->row_context);
    return true;
}

void receiver_shutdown(DestReceiver* self)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    if (r->context != nullptr) {
        MemoryContextDelete(r->context);  // and row_context, its child
        r->context = nullptr;
        r->row_context = nullptr;
        r->columns = nullptr;
    }
}

void receiver_destroy(DestReceiver* self) { pfree(self); }

}  // namespace

DestReceiver* make_row_digest_receiver(core::RowHasher* hasher, core::MultisetDigest* digest)
{
    auto* r = static_cast<RowDigestReceiver*>(palloc0(sizeof(RowDigestReceiver)));
    r->pub.receiveSlot = receiver_receive;
    r->pub.rStartup = receiver_startup;
    r->pub.rShutdown = receiver_shutdown;
    r->pub.rDestroy = receiver_destroy;
    // Any mode but DestNone/DestSPI: SPI then reports SPI_OK_SELECT and leaves
    // the rows to us (plpgsql's RETURN QUERY does the same with a tuplestore).
    r->pub.mydest = DestTuplestore;
    r->hasher = hasher;
    r->digest = digest;
    return &r->pub;
}

}  // namespace pg_idempotent::pg
