#include "pg/relation_storage.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/table.h"
#include "commands/cluster.h"
#include "commands/tablecmds.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace pg_idempotent::pg {

namespace {

// Whether every attribute of a lies where b's does, with the same storage:
// a heap of one read through the other's descriptor gives the same values.
bool same_physical_columns(TupleDesc a, TupleDesc b)
{
    if (a->natts != b->natts)
        return false;
    for (int i = 0; i < a->natts; ++i) {
        const Form_pg_attribute x = TupleDescAttr(a, i);
        const Form_pg_attribute y = TupleDescAttr(b, i);
        if (x->attisdropped != y->attisdropped || x->attlen != y->attlen || x->attalign != y->attalign ||
            x->attbyval != y->attbyval)
            return false;
        if (!x->attisdropped &&
            (x->atttypid != y->atttypid || x->atttypmod != y->atttypmod || x->attcollation != y->attcollation ||
             strcmp(NameStr(x->attname), NameStr(y->attname)) != 0))
            return false;
    }
    return true;
}

}  // namespace

void replace_storage(std::uint32_t target, std::uint32_t staging)
{
    pg_call([&]() noexcept {
        Relation old_rel = table_open(target, AccessExclusiveLock);
        Relation new_rel = table_open(staging, AccessExclusiveLock);
        // Our own open scans of the table (a cursor, the caller's query)
        // would read storage that is gone.
        CheckTableNotInUse(old_rel, "overwrite_partition");
        if (new_rel->rd_rel->relkind != RELKIND_RELATION || old_rel->rd_rel->relkind != RELKIND_RELATION ||
            new_rel->rd_rel->relpersistence != old_rel->rd_rel->relpersistence ||
            new_rel->rd_rel->relam != old_rel->rd_rel->relam ||
            !same_physical_columns(RelationGetDescr(old_rel), RelationGetDescr(new_rel)))
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("the storage of \"%s\" cannot take the rows of \"%s\"",
                                   RelationGetRelationName(old_rel), RelationGetRelationName(new_rel)),
                            errdetail("Their columns, persistence or access method differ."),
                            errhint("The table changed while its new rows were built; nothing was changed.")));
        // The new rows were all inserted by this transaction after the table
        // was created: its own horizon is theirs.
        const TransactionId frozen = new_rel->rd_rel->relfrozenxid;
        const MultiXactId min_multi = new_rel->rd_rel->relminmxid;
        const char persistence = old_rel->rd_rel->relpersistence;
        table_close(new_rel, NoLock);
        table_close(old_rel, NoLock);
        finish_heap_swap(target, staging, false, false, true, true, frozen, min_multi, persistence);
    });
}

}  // namespace pg_idempotent::pg
