#include "pg/partition_lookup.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/table.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
}

namespace pg_idempotent::pg {

namespace {

// The index in the descriptor of the partition for one key value (-1: none),
// as get_partition_for_tuple (execPartition.c, static there) computes it for
// a one-column key; the DEFAULT partition is left to the caller.
int bound_index(PartitionKey key, PartitionBoundInfo bounds, Datum value, bool is_null)
{
    if (key->strategy == PARTITION_STRATEGY_HASH) {
        const uint64 hash = compute_partition_hash_value(1, key->partsupfunc, key->partcollation, &value, &is_null);
        return bounds->indexes[hash % bounds->nindexes];
    }
    if (key->strategy == PARTITION_STRATEGY_LIST) {
        if (is_null)
            return partition_bound_accepts_nulls(bounds) ? bounds->null_index : -1;
        bool equal = false;
        const int offset = partition_list_bsearch(key->partsupfunc, key->partcollation, bounds, value, &equal);
        return offset >= 0 && equal ? bounds->indexes[offset] : -1;
    }
    if (is_null)  // range: a NULL key goes to the DEFAULT partition only
        return -1;
    bool equal = false;
    const int offset = partition_range_datum_bsearch(key->partsupfunc, key->partcollation, bounds, 1, &value, &equal);
    return bounds->indexes[offset + 1];
}

}  // namespace

PartitionForValue partition_for_value(std::uint32_t parent, const TypedValue& value)
{
    PartitionForValue out;
    pg_call([&]() noexcept {
        Relation rel = table_open(parent, AccessShareLock);
        PartitionKey key = RelationGetPartitionKey(rel);
        PartitionDesc desc = RelationGetPartitionDesc(rel, true);
        if (key != nullptr && key->partnatts == 1 && desc->nparts > 0 && desc->boundinfo != nullptr) {
            const int index = bound_index(key, desc->boundinfo, static_cast<Datum>(value.datum), value.is_null);
            if (index >= 0)
                out.partition = desc->oids[index];
            else
                out.default_takes_it = desc->boundinfo->default_index >= 0;
        }
        table_close(rel, NoLock);
    });
    return out;
}

std::optional<std::string> partition_key_column(std::uint32_t parent)
{
    const char* name = pg_call([&]() noexcept -> const char* {
        Relation rel = table_open(parent, AccessShareLock);
        PartitionKey key = RelationGetPartitionKey(rel);
        const char* column = nullptr;
        if (key != nullptr && key->partnatts == 1 && key->partattrs[0] != 0)
            column = get_attname(parent, key->partattrs[0], false);
        table_close(rel, NoLock);
        return column;
    });
    if (name == nullptr)
        return std::nullopt;
    return std::string(name);
}

}  // namespace pg_idempotent::pg
