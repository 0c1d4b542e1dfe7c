// The differences between the PostgreSQL majors this module builds against
// (15 to 18) in one place: the rest of src/pg/ calls these, never
// PG_VERSION_NUM. Each guard names the major that changed the API, so 16
// and 17 get the right branch by construction (built and tested here: 15
// and 18).
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
}

namespace pg_idempotent::pg::compat {

// The local id of this backend's top-level transaction (17 moved it into
// PGPROC's vxid).
inline LocalTransactionId my_local_transaction_id()
{
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

// An executor state's range table of one relation that is inserted into (16
// moved the permissions into RTEPermissionInfo; 18 passes the relations
// left after initial pruning).
inline void init_insert_range_table(EState* estate, Oid relid, char relkind, LOCKMODE lockmode)
{
    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_RELATION;
    rte->relid = relid;
    rte->relkind = relkind;
    rte->rellockmode = lockmode;
#if PG_VERSION_NUM >= 160000
    RTEPermissionInfo* perm = makeNode(RTEPermissionInfo);
    perm->relid = relid;
    perm->inh = false;
    perm->requiredPerms = ACL_INSERT;
    rte->perminfoindex = 1;
#if PG_VERSION_NUM >= 180000
    ExecInitRangeTable(estate, list_make1(rte), list_make1(perm), bms_make_singleton(1));
#else
    ExecInitRangeTable(estate, list_make1(rte), list_make1(perm));
#endif
#else
    rte->requiredPerms = ACL_INSERT;
    ExecInitRangeTable(estate, list_make1(rte));
#endif
}

// Whether the slot's row would conflict on the arbiter indexes, waiting for
// in-progress inserters; the conflicting row's TID in *conflict (18 added
// the TID of the row being updated: none here).
inline bool check_index_constraints(ResultRelInfo* rri, TupleTableSlot* slot, EState* estate, ItemPointer conflict,
                                    List* arbiters)
{
#if PG_VERSION_NUM >= 180000
    return ExecCheckIndexConstraints(rri, slot, estate, conflict, nullptr, arbiters);
#else
    return ExecCheckIndexConstraints(rri, slot, estate, conflict, arbiters);
#endif
}

// The index entries of a speculatively inserted row (16 added
// onlySummarizing, for HOT updates: false for an insert).
inline List* insert_index_tuples_speculative(ResultRelInfo* rri, TupleTableSlot* slot, EState* estate,
                                             bool* spec_conflict, List* arbiters)
{
#if PG_VERSION_NUM >= 160000
    return ExecInsertIndexTuples(rri, slot, estate, false, true, spec_conflict, arbiters, false);
#else
    return ExecInsertIndexTuples(rri, slot, estate, false, true, spec_conflict, arbiters);
#endif
}

// expression_tree_walker with a typed walker: 16 typed it (a macro over
// expression_tree_walker_impl); 15 takes bool (*)(), reached through
// void (*)(), which -Wcast-function-type lets match any function type.
inline bool walk_expression(Node* node, bool (*walker)(Node*, void*), void* context)
{
#if PG_VERSION_NUM >= 160000
    return expression_tree_walker(node, walker, context);
#else
    return expression_tree_walker(node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker)), context);
#endif
}

// Whether this backend holds the lock in exactly this mode (17 added
// orstronger).
inline bool lock_held_by_me(const LOCKTAG* tag, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 170000
    return LockHeldByMe(tag, mode, false);
#else
    return LockHeldByMe(tag, mode);
#endif
}

}  // namespace pg_idempotent::pg::compat
