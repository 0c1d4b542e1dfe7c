#include "pg/transactions.hpp"

#include "pg/compat.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "access/transam.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/resowner.h"
}

namespace pg_idempotent::pg {

void in_rolled_back_subtransaction(const std::function<void()>& fn)
{
    MemoryContext const cxt = CurrentMemoryContext;
    ResourceOwner const owner = CurrentResourceOwner;
    pg_call([]() noexcept { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    auto roll_back = [&] {
        pg_call([]() noexcept { RollbackAndReleaseCurrentSubTransaction(); });
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    };
    try {
        fn();
    } catch (...) {
        // A PostgreSQL error was caught by pg_call (its state flushed): the
        // subtransaction is rolled back here, as plpgsql's exception blocks
        // do, and the error goes on to the caller.
        roll_back();
        throw;
    }
    roll_back();
}

std::optional<PgError> try_in_subtransaction(const std::function<void()>& fn)
{
    MemoryContext const cxt = CurrentMemoryContext;
    ResourceOwner const owner = CurrentResourceOwner;
    auto restore = [&] {
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    };
    pg_call([]() noexcept { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    try {
        fn();
    } catch (PgError& e) {
        // The ErrorData lives in error_copy_context(), which outlives the
        // subtransaction: the caller may still rethrow it.
        pg_call([]() noexcept { RollbackAndReleaseCurrentSubTransaction(); });
        restore();
        return e;
    } catch (...) {
        pg_call([]() noexcept { RollbackAndReleaseCurrentSubTransaction(); });
        restore();
        throw;
    }
    pg_call([]() noexcept { ReleaseCurrentSubTransaction(); });
    restore();
    return std::nullopt;
}

std::uint32_t local_transaction_id()
{
    return MyProc != nullptr ? compat::my_local_transaction_id() : 0;
}

std::uint64_t newest_assigned_xid()
{
    const FullTransactionId next = pg_call([]() noexcept { return ReadNextFullTransactionId(); });
    return U64FromFullTransactionId(next) - 1;
}

bool in_transaction_block()
{
    return IsTransactionBlock();
}

}  // namespace pg_idempotent::pg
