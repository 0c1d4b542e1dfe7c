#include "pg_native/speculative_insert.hpp"

#include <cstring>

#include "pg/compat.hpp"
#include "pg_native/target_cache.hpp"

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am_d.h"
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

namespace {

// Whether the table is one the direct insert may write (a plain table, no
// triggers or row security), its columns mapped to the specs in *at.
bool plain_target(Relation rel, const TargetKey& key, int* at)
{
    return rel->rd_rel->relkind == RELKIND_RELATION && rel->trigdesc == nullptr && !rel->rd_rel->relrowsecurity &&
           map_columns(RelationGetDescr(rel), key.specs, key.n, key.allow_defaults, at);
}

// Whether every index is a btree: another access method may keep state
// for the inserts of one statement (IndexInfo's ii_AmCache, ended by
// index_insert_cleanup), which a cached IndexInfo would carry over.
bool only_btrees(const ResultRelInfo* rri)
{
    for (int i = 0; i < rri->ri_NumIndices; ++i) {
        if (rri->ri_IndexRelationDescs[i]->rd_rel->relam != BTREE_AM_OID)
            return false;
    }
    return true;
}

// The entry's executor state for rel, the indexes opened (for this call);
// false when the direct insert may not write the table (nothing open).
bool build_target(CachedTarget* e, Relation rel)
{
    if (!plain_target(rel, e->key, e->at))
        return false;
    e->rel = rel;
    e->calls_user_functions = checks_call_user_functions(rel);
    MemoryContext const caller = MemoryContextSwitchTo(e->memory);
    compat::init_insert_range_table(e->estate, e->key.relid, rel->rd_rel->relkind, RowExclusiveLock);
    e->rri = makeNode(ResultRelInfo);
    InitResultRelInfo(e->rri, rel, 1, nullptr, 0);
    ExecOpenIndices(e->rri, true);
    e->arbiters = arbiter_indexes(e->rri, static_cast<AttrNumber>(e->at[e->key.a] + 1),
                                  static_cast<AttrNumber>(e->at[e->key.b] + 1));
    if (e->arbiters == NIL) {
        ExecCloseIndices(e->rri);
        MemoryContextSwitchTo(caller);
        return false;
    }
    e->keep = only_btrees(e->rri);
    e->index_oids = static_cast<Oid*>(palloc(sizeof(Oid) * (e->rri->ri_NumIndices + 1)));
    for (int i = 0; i < e->rri->ri_NumIndices; ++i)
        e->index_oids[i] = RelationGetRelid(e->rri->ri_IndexRelationDescs[i]);
    e->nindexes = e->rri->ri_NumIndices;
    // A copy of the descriptor (no reference count): a slot pins a counted
    // one with the resource owner of the moment, and this one outlives it.
    // With its constraints: a column's missing value (ADD COLUMN ... DEFAULT)
    // is read from them for the rows written before it.
    TupleDesc desc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
    e->slot = ExecInitExtraTupleSlot(e->estate, desc, table_slot_callbacks(rel));
    e->found = ExecInitExtraTupleSlot(e->estate, desc, table_slot_callbacks(rel));
    MemoryContextSwitchTo(caller);
    return true;
}

// The cached entry's indexes opened again for this call, if the relcache
// hands back the relations it was built with; else false, nothing open.
bool reopen_target(CachedTarget* e, Relation rel)
{
    if (e->rel != rel)
        return false;
    for (int i = 0; i < e->rri->ri_NumIndices; ++i) {
        Relation opened = index_open(e->index_oids[i], RowExclusiveLock);
        if (opened != e->rri->ri_IndexRelationDescs[i]) {
            index_close(opened, RowExclusiveLock);
            for (int j = 0; j < i; ++j)
                index_close(e->rri->ri_IndexRelationDescs[j], RowExclusiveLock);
            return false;
        }
    }
    return true;
}

// As ExecCloseIndices: the indexes closed and their locks released.
void close_indexes(CachedTarget* e)
{
    if (!e->keep) {
        ExecCloseIndices(e->rri);
        return;
    }
    for (int i = 0; i < e->rri->ri_NumIndices; ++i)
        index_close(e->rri->ri_IndexRelationDescs[i], RowExclusiveLock);
}

// The call is done with the entry (its indexes closed): kept for the next
// call, or, when it may not serve one, dropped.
void end_use(CachedTarget* e)
{
    if (e->keep)
        release_target(e);
    else
        drop_target(e);
}

// The entry's executor state for this call: the cached one, or built.
CachedTarget* target_for_call(const TargetKey& key, Relation rel)
{
    CachedTarget* e = cached_target(key);
    if (e != nullptr && reopen_target(e, rel))
        return e;
    if (e != nullptr)
        drop_target(e);
    e = new_target(key);
    if (build_target(e, rel))
        return e;
    drop_target(e);
    return nullptr;
}

}  // namespace

bool open_target(Oid relid, const ColumnSpec* specs, int n, bool allow_defaults, int a, int b, InsertTarget* t)
{
    const TargetKey key{relid, specs, n, allow_defaults, a, b};
    Relation rel = table_open(relid, RowExclusiveLock);
    CachedTarget* e = target_for_call(key, rel);
    if (e != nullptr && e->calls_user_functions && !t->search_path_pinned) {
        close_indexes(e);
        end_use(e);
        e = nullptr;
    }
    if (e == nullptr) {
        table_close(rel, NoLock);
        return false;
    }
    use_target(e);
    t->rel = rel;
    std::memcpy(t->at, e->at, sizeof(int) * n);
    t->estate = e->estate;
    t->rri = e->rri;
    t->arbiters = e->arbiters;
    t->slot = e->slot;
    t->found = e->found;
    t->call = e->call;
    t->cache = e;
    MemoryContextSwitchTo(e->call);
    return true;
}

void close_target(MemoryContext caller, InsertTarget* t)
{
    CachedTarget* e = t->cache;
    ExecClearTuple(t->slot);
    ExecClearTuple(t->found);
    ResetPerTupleExprContext(t->estate);
    close_indexes(e);
    MemoryContextSwitchTo(caller);
    table_close(t->rel, NoLock);
    end_use(e);
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
