#include "pg/named_rows.hpp"

#include "pg/guard.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "executor/tstoreReceiver.h"
#include "utils/queryenvironment.h"
}

namespace pg_idempotent::pg {
namespace {

Oid type_oid(NamedRowType type)
{
    switch (type) {
    case NamedRowType::kText:
        return TEXTOID;
    case NamedRowType::kJsonb:
        return JSONBOID;
    case NamedRowType::kTimestamptz:
        return TIMESTAMPTZOID;
    }
    return InvalidOid;
}

// Made in the current memory context (SPI's procedure context while
// connected: it lives as long as the connection that reads it).
TupleDesc describe(const std::vector<NamedRowColumn>& columns)
{
    return pg_call([&]() noexcept {
        TupleDesc desc = CreateTemplateTupleDesc(static_cast<int>(columns.size()));
        AttrNumber n = 0;
        for (const auto& c : columns)
            TupleDescInitEntry(desc, ++n, c.name.c_str(), type_oid(c.type), -1, 0);
        return desc;
    });
}

}  // namespace

NamedRows::NamedRows(SpiSession& spi, std::string name, const std::vector<NamedRowColumn>& columns,
                     const std::string& query, const Params& params, int budget_kb)
    : name_(std::move(name))
{
    spi.connect();
    TupleDesc desc = describe(columns);
    store_ = pg_call([&]() noexcept { return tuplestore_begin_heap(false, false, budget_kb); });
    DestReceiver* dest = pg_call([&]() noexcept {
        DestReceiver* d = CreateTuplestoreDestReceiver();
        // The target descriptor makes a query whose columns differ in type
        // an error instead of rows read by the wrong type. The query casts
        // each column to its type, so no conversion map is built (which
        // detoasting could not work with). Detoasting fetches what is
        // stored out of line; a compressed value stays compressed.
        SetTuplestoreDestReceiverParams(d, store_, CurrentMemoryContext, true, desc,
                                        "the gathered batch does not have the expected column types");
        return d;
    });
    // On an error the store is left alone (an ERROR inside it may have
    // freed part of it): the abort frees it with SPI's memory, and closes
    // its temporary file with the resource owner.
    spi.send_rows(query, dest, params);
    pg_call([&]() noexcept {
        dest->rDestroy(dest);
        rows_ = tuplestore_tuple_count(store_);
        auto* enr = static_cast<EphemeralNamedRelation>(palloc0(sizeof(EphemeralNamedRelationData)));
        enr->md.name = pstrdup(name_.c_str());
        enr->md.reliddesc = InvalidOid;
        enr->md.tupdesc = desc;
        enr->md.enrtype = ENR_NAMED_TUPLESTORE;
        enr->md.enrtuples = static_cast<double>(rows_);
        enr->reldata = store_;
        const int rc = SPI_register_relation(enr);
        if (rc != SPI_OK_REL_REGISTER)
            elog(ERROR, "SPI_register_relation failed: %s", SPI_result_code_string(rc));
    });
}

void NamedRows::release()
{
    if (store_ == nullptr)
        return;
    pg_call([&]() noexcept {
        SPI_unregister_relation(name_.c_str());
        tuplestore_end(store_);  // may raise: closing a temporary file flushes it
    });
    store_ = nullptr;
}

}  // namespace pg_idempotent::pg
