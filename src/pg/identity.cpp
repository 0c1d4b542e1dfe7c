#include "pg/identity.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "utils/resowner.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
}

namespace pg_idempotent::pg {

std::uint32_t current_user_id() { return GetUserId(); }

std::string current_user_name()
{
    const char* name = pg_call([] { return GetUserNameFromId(GetUserId(), false); });
    return std::string(name);
}

bool current_user_is_superuser()
{
    return pg_call([] { return superuser(); });
}

namespace {
Oid extension_owner()
{
    return pg_call([] {
        HeapTuple tup = SearchSysCache1(NAMESPACENAME, CStringGetDatum("idem"));
        if (!HeapTupleIsValid(tup))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_SCHEMA), errmsg("schema \"idem\" does not exist")));
        Oid owner = reinterpret_cast<Form_pg_namespace>(GETSTRUCT(tup))->nspowner;
        ReleaseSysCache(tup);
        return owner;
    });
}
}  // namespace

void as_extension_owner(const std::function<void()>& fn)
{
    const Oid owner = extension_owner();
    Oid saved_user = InvalidOid;
    int saved_context = 0;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
    fn();
    SetUserIdAndSecContext(saved_user, saved_context);
}

void with_lock_timeout(const std::string& value, const std::function<void()>& fn)
{
    const int level = pg_call([&] {
        const int nest = NewGUCNestLevel();
        (void)set_config_option("lock_timeout", value.c_str(), PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        return nest;
    });
    fn();
    pg_call([&] { AtEOXact_GUC(true, level); });
}

void in_rolled_back_subtransaction(const std::function<void()>& fn)
{
    MemoryContext const cxt = CurrentMemoryContext;
    ResourceOwner const owner = CurrentResourceOwner;
    pg_call([] { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    auto roll_back = [&] {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
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
    pg_call([] { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    try {
        fn();
    } catch (PgError& e) {
        // The ErrorData lives in error_copy_context(), which outlives the
        // subtransaction: the caller may still rethrow it.
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
        restore();
        return e;
    } catch (...) {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
        restore();
        throw;
    }
    pg_call([] { ReleaseCurrentSubTransaction(); });
    restore();
    return std::nullopt;
}

bool try_in_subtransaction(const std::function<void()>& fn, std::string* error)
{
    const std::optional<PgError> failed = try_in_subtransaction(fn);
    if (failed && error != nullptr)
        *error = error_message(*failed);
    return !failed;
}

void warning(const std::string& message, const std::string& detail)
{
    pg_call([&] {
        ereport(WARNING, (errmsg_internal("%s", message.c_str()),
                          detail.empty() ? 0 : errdetail_internal("%s", detail.c_str())));
    });
}

std::uint32_t local_transaction_id() { return MyProc != nullptr ? MyProc->lxid : 0; }

}  // namespace pg_idempotent::pg
