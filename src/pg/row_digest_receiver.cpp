#include "pg/row_digest_receiver.hpp"

#include <cstring>

namespace pg_idempotent::pg {

namespace {

struct RowDigestReceiver {
    DestReceiver pub;  // first, so the executor can treat us as a DestReceiver
    core::RowHasher* hasher;
    core::MultisetDigest* digest;
    MemoryContext row_context;  // detoasted copies live here for one row
};

void receiver_startup(DestReceiver* self, int, TupleDesc)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    r->row_context = AllocSetContextCreate(CurrentMemoryContext, "pg_idempotent row image",
                                           ALLOCSET_DEFAULT_SIZES);
}

// Called by the executor for every row: no C++ object lives in this frame, and
// the core calls are noexcept, so an ERROR from detoasting unwinds cleanly.
bool receiver_receive(TupleTableSlot* slot, DestReceiver* self)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    TupleDesc desc = slot->tts_tupleDescriptor;
    slot_getallattrs(slot);

    MemoryContext old = MemoryContextSwitchTo(r->row_context);
    uint32 live = 0;
    for (int i = 0; i < desc->natts; ++i)
        if (!TupleDescAttr(desc, i)->attisdropped)
            ++live;
    r->hasher->begin_row(live);
    for (int i = 0; i < desc->natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        if (att->attisdropped)
            continue;  // never part of a row's image
        feed_column_image(r->hasher, slot->tts_values[i], slot->tts_isnull[i], att->attlen,
                          att->attbyval);
    }
    const core::Digest128 row = r->hasher->end_row();
    if (!r->hasher->ok())
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory hashing a row")));
    r->digest->add(row);
    MemoryContextSwitchTo(old);
    MemoryContextReset(r->row_context);
    return true;
}

void receiver_shutdown(DestReceiver* self)
{
    auto* r = reinterpret_cast<RowDigestReceiver*>(self);
    if (r->row_context != nullptr) {
        MemoryContextDelete(r->row_context);
        r->row_context = nullptr;
    }
}

void receiver_destroy(DestReceiver* self) { pfree(self); }

}  // namespace

void feed_column_image(core::RowHasher* hasher, Datum value, bool isnull, int16 typlen,
                       bool typbyval)
{
    if (isnull) {
        hasher->add_null();
    } else if (typbyval) {
        // The bytes a heap tuple would store, as datum_image_eq compares them.
        char bytes[sizeof(Datum)];
        store_att_byval(bytes, value, typlen);
        hasher->add_value(bytes, static_cast<std::size_t>(typlen));
    } else if (typlen > 0) {
        hasher->add_value(DatumGetPointer(value), static_cast<std::size_t>(typlen));
    } else if (typlen == -1) {
        // Compressed, external or expanded: the stored image is the plain
        // value; the 1- or 4-byte header is not part of it.
        struct varlena* v = reinterpret_cast<struct varlena*>(DatumGetPointer(value));
        if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
            v = detoast_attr(v);  // short inline headers need no copy
        hasher->add_value(VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
    } else {
        const char* s = DatumGetCString(value);  // typlen -2: a cstring
        hasher->add_value(s, std::strlen(s));
    }
}

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
