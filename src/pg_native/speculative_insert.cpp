#include "pg_native/speculative_insert.hpp"

#include <cstring>

#include "pg/compat.hpp"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "nodes/nodeFuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

namespace pg_idempotent::pg {

namespace {

// The column of the spec, or -1.
int spec_of(const char* name, const ColumnSpec* specs, int n, int guess)
{
    // The released order first (one comparison per column), then any other.
    if (guess < n && strcmp(name, specs[guess].name) == 0)
        return guess;
    for (int c = 0; c < n; ++c) {
        if (strcmp(name, specs[c].name) == 0)
            return c;
    }
    return -1;
}

bool map_columns(TupleDesc desc, const ColumnSpec* specs, int n, bool allow_defaults, int* at)
{
    int live = 0;
    for (int c = 0; c < n; ++c)
        at[c] = -1;
    for (int i = 0; i < desc->natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        if (att->attisdropped)
            continue;
        const int found = spec_of(NameStr(att->attname), specs, n, live++);
        if (found < 0 || at[found] >= 0 || att->atttypid != specs[found].type || (att->atthasdef && !allow_defaults) ||
            att->attidentity != '\0' || att->attgenerated != '\0')
            return false;
        at[found] = i;
    }
    return live == n;
}

// Every valid, immediate unique index on exactly the two columns, without
// expressions or predicate; NIL if there is none or one is deferrable.
List* arbiter_indexes(ResultRelInfo* rri, AttrNumber x, AttrNumber y)
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
        if (!((a == x && b == y) || (a == y && b == x)))
            continue;
        if (!index->rd_index->indimmediate)
            return NIL;
        arbiters = lappend_oid(arbiters, RelationGetRelid(index));
    }
    return arbiters;
}

}  // namespace

Oid table_for_direct_insert(const char* table)
{
    if (!ActiveSnapshotSet() || IsolationIsSerializable() || XactReadOnly || IsInParallelMode())
        return InvalidOid;
    const Oid ns = get_namespace_oid("idem", true);
    const Oid relid = OidIsValid(ns) ? get_relname_relid(table, ns) : InvalidOid;
    if (!OidIsValid(relid))
        return InvalidOid;
    if (pg_class_aclmask(relid, GetUserId(), ACL_INSERT | ACL_SELECT, ACLMASK_ALL) != (ACL_INSERT | ACL_SELECT))
        return InvalidOid;
    return relid;
}

namespace {

bool user_function(Oid function, void*)
{
    return function >= FirstNormalObjectId;
}

bool calls_user_function(Node* node, void* context)
{
    if (node == nullptr)
        return false;
    if (check_functions_in_node(node, user_function, context))
        return true;
    return compat::walk_expression(node, calls_user_function, context);
}

// Whether a CHECK constraint of the table calls a function that is not
// built in: such a function may look names up through search_path.
bool checks_call_user_functions(Relation rel)
{
    const TupleConstr* constr = rel->rd_att->constr;
    for (int i = 0; constr != nullptr && i < constr->num_check; ++i) {
        Node* expr = static_cast<Node*>(stringToNode(constr->check[i].ccbin));
        if (calls_user_function(expr, nullptr))
            return true;
    }
    return false;
}

}  // namespace

bool open_target(Oid relid, const ColumnSpec* specs, int n, bool allow_defaults, int a, int b, InsertTarget* t)
{
    MemoryContext const caller = CurrentMemoryContext;
    t->rel = table_open(relid, RowExclusiveLock);
    if (t->rel->rd_rel->relkind != RELKIND_RELATION || t->rel->trigdesc != nullptr || t->rel->rd_rel->relrowsecurity ||
        !map_columns(RelationGetDescr(t->rel), specs, n, allow_defaults, t->at) ||
        (!t->search_path_pinned && checks_call_user_functions(t->rel))) {
        table_close(t->rel, NoLock);
        return false;
    }
    t->estate = CreateExecutorState();
    MemoryContextSwitchTo(t->estate->es_query_cxt);
    compat::init_insert_range_table(t->estate, relid, t->rel->rd_rel->relkind, RowExclusiveLock);
    t->rri = makeNode(ResultRelInfo);
    InitResultRelInfo(t->rri, t->rel, 1, nullptr, 0);
    ExecOpenIndices(t->rri, true);
    t->arbiters = arbiter_indexes(t->rri, static_cast<AttrNumber>(t->at[a] + 1), static_cast<AttrNumber>(t->at[b] + 1));
    if (t->arbiters == NIL) {
        ExecCloseIndices(t->rri);
        MemoryContextSwitchTo(caller);
        FreeExecutorState(t->estate);
        table_close(t->rel, NoLock);
        return false;
    }
    TupleDesc desc = RelationGetDescr(t->rel);
    t->slot = ExecInitExtraTupleSlot(t->estate, desc, table_slot_callbacks(t->rel));
    t->found = ExecInitExtraTupleSlot(t->estate, desc, table_slot_callbacks(t->rel));
    return true;
}

void close_target(MemoryContext caller, InsertTarget* t)
{
    ExecCloseIndices(t->rri);
    ExecResetTupleTable(t->estate->es_tupleTable, false);
    MemoryContextSwitchTo(caller);
    FreeExecutorState(t->estate);
    table_close(t->rel, NoLock);
}

void clear_row(InsertTarget* t)
{
    ExecClearTuple(t->slot);
    for (int i = 0; i < t->slot->tts_tupleDescriptor->natts; ++i)
        t->slot->tts_isnull[i] = true;
}

void set_column(InsertTarget* t, int column, Datum value)
{
    t->slot->tts_values[t->at[column]] = value;
    t->slot->tts_isnull[t->at[column]] = false;
}

namespace {

void require_visible_conflict(const InsertTarget& t)
{
    if (!IsolationUsesXactSnapshot() || table_tuple_satisfies_snapshot(t.rel, t.found, GetActiveSnapshot()))
        return;
    bool isnull = false;
    const Datum xmin = slot_getsysattr(t.found, MinTransactionIdAttributeNumber, &isnull);
    if (!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to concurrent update"),
                        errhint("The transaction might succeed if retried.")));
}

}  // namespace

Conflict find_conflict(InsertTarget* t, int a, Datum a_value, int b, Datum b_value, bool fail_invisible)
{
    clear_row(t);
    set_column(t, a, a_value);
    set_column(t, b, b_value);
    ExecStoreVirtualTuple(t->slot);
    ItemPointerData conflict;
    if (compat::check_index_constraints(t->rri, t->slot, t->estate, &conflict, t->arbiters))
        return Conflict::kNone;
    SnapshotData dirty;
    InitDirtySnapshot(dirty);
    if (!table_tuple_fetch_row_version(t->rel, &conflict, &dirty, t->found))
        return Conflict::kGone;
    if (fail_invisible)
        require_visible_conflict(*t);
    return Conflict::kFound;
}

bool insert_speculatively(InsertTarget* t)
{
    t->estate->es_output_cid = GetCurrentCommandId(true);
    const uint32 token = SpeculativeInsertionLockAcquire(GetCurrentTransactionId());
    table_tuple_insert_speculative(t->rel, t->slot, t->estate->es_output_cid, 0, nullptr, token);
    bool spec_conflict = false;
    List* recheck = compat::insert_index_tuples_speculative(t->rri, t->slot, t->estate, &spec_conflict, t->arbiters);
    table_tuple_complete_speculative(t->rel, t->slot, token, !spec_conflict);
    SpeculativeInsertionLockRelease(GetCurrentTransactionId());
    list_free(recheck);
    return !spec_conflict;
}

Datum text_datum(const char* data, std::size_t size)
{
    return PointerGetDatum(cstring_to_text_with_len(data, static_cast<int>(size)));
}

}  // namespace pg_idempotent::pg
