// One row inserted into one of idem's tables the way INSERT ... ON CONFLICT
// (a, b) DO NOTHING inserts it, without SPI: the executor's own speculative
// insertion (the same waits, the same arbiter, every index maintained), or
// the row already there, read in the same step. The table-specific parts
// (which columns, which values) are the caller's: key_row_insert (idem.keys)
// and effect_row_insert (idem.effects).
//
// Why: through SPI, one row pays the cached-plan check, a whole executor
// start (ModifyTable, the VALUES projection, RETURNING) and, for a row that
// exists, a second statement to read it. bench/keys.sh and bench/effects.sh
// measure the difference.
//
// Every function here runs inside one pg_call: plain PostgreSQL calls, no
// C++ object with a destructor.
#pragma once

#include "pg/postgres.hpp"

extern "C" {
#include "executor/executor.h"
#include "utils/rel.h"
}

namespace pg_idempotent::pg {

struct ColumnSpec {
    const char* name;
    Oid type;
};

// idem.<table>, when this transaction may write it here exactly as the SQL
// path would (as the current user, with INSERT and SELECT); InvalidOid when
// the SQL path must run instead: under SERIALIZABLE (its statements take
// the predicate locks), read-only, in parallel mode, without a snapshot.
Oid table_for_direct_insert(const char* table);

struct CachedTarget;

// The table opened and executor state of one result relation, as logical
// replication's apply worker builds it (no plan); the executor state is
// kept for the transaction's next call (target_cache.hpp).
struct InsertTarget {
    Relation rel = nullptr;
    int* at = nullptr;  // index into the tuple descriptor of each ColumnSpec
    EState* estate = nullptr;
    ResultRelInfo* rri = nullptr;
    List* arbiters = NIL;
    TupleTableSlot* slot = nullptr;   // the row to insert
    TupleTableSlot* found = nullptr;  // the row already there
    MemoryContext call = nullptr;     // this call's allocations, until close_target
    CachedTarget* cache = nullptr;
    // Set by the caller before open_target: whether it pinned search_path
    // (pg::as_extension_owner). Unpinned, a table whose CHECK constraints
    // call a function that is not built in is not opened: such a function
    // may look names up through the caller's search_path while running as
    // the extension owner; the caller's SQL path (pinned) inserts instead.
    bool search_path_pinned = false;
};

// Opens the table and its indexes and maps its columns (t->at, n entries)
// to the specs, with the executor state for the arbiters ON CONFLICT
// (specs[a], specs[b]) would infer: this transaction's cached one when the
// relcache still hands back the same relations, else built. The call's
// memory context (t->call) is left current. False (everything released,
// caller current) when the table is not a plain one with exactly these
// columns (none an identity or generated; defaults allowed only with
// allow_defaults), has triggers or row security, a CHECK that calls a
// function not built in while search_path is not pinned, or no such
// arbiter (or a deferrable one).
bool open_target(Oid relid, const ColumnSpec* specs, int n, bool allow_defaults, int a, int b, InsertTarget* t);
// Ends the call: the slots emptied, the indexes and the table closed (the
// table's lock kept, as the executor keeps it), the call's memory freed and
// the caller's context current; the executor state stays cached.
void close_target(MemoryContext caller, InsertTarget* t);

// The slot emptied (every column NULL), and one column set.
void clear_row(InsertTarget* t);
void set_column(InsertTarget* t, int column, Datum value);

enum class Conflict { kNone, kFound, kGone };

// Whether a row holds the arbiter columns' values: kFound with it in
// t->found. Waits for an open transaction that holds a conflicting row;
// with fail_invisible, under REPEATABLE READ one this snapshot cannot see is
// 40001, as with ON CONFLICT DO NOTHING (else the caller explains it). kGone: the conflicting row went away since: look
// again.
Conflict find_conflict(InsertTarget* t, int a, Datum a_value, int b, Datum b_value, bool fail_invisible);

// ExecInsert's speculative insertion of t->slot (its virtual tuple stored):
// false when a concurrent inserter got there between the check and the
// index insertion (our row is killed; the caller checks again).
bool insert_speculatively(InsertTarget* t);

Datum text_datum(const char* data, std::size_t size);

}  // namespace pg_idempotent::pg
