#include "pg/roles.hpp"

#include "pg/compat.hpp"
#include "pg/guard.hpp"
#include "pg/settings.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
}

namespace pg_idempotent::pg {

std::uint32_t current_user_id()
{
    return GetUserId();
}

std::string current_user_name()
{
    const char* name = pg_call([]() noexcept { return GetUserNameFromId(GetUserId(), false); });
    return std::string(name);
}

bool current_user_is_superuser()
{
    return pg_call([]() noexcept { return superuser(); });
}

bool role_exists(std::uint32_t role)
{
    return pg_call([&]() noexcept { return SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)); });
}

std::string role_name(std::uint32_t role)
{
    const char* name = pg_call([&]() noexcept { return GetUserNameFromId(role, true); });
    return name != nullptr ? std::string(name) : std::to_string(role);
}

bool current_user_has_privileges_of(std::uint32_t role)
{
    return pg_call([&]() noexcept { return has_privs_of_role(GetUserId(), role); });
}

void require_table_privileges(std::uint32_t relation, std::initializer_list<TablePrivilege> privileges,
                              const std::string& why)
{
    for (const TablePrivilege p : privileges) {
        AclMode mode = ACL_SELECT;
        const char* name = "SELECT";
        switch (p) {
        case TablePrivilege::kSelect:
            break;
        case TablePrivilege::kInsert:
            mode = ACL_INSERT;
            name = "INSERT";
            break;
        case TablePrivilege::kUpdate:
            mode = ACL_UPDATE;
            name = "UPDATE";
            break;
        case TablePrivilege::kDelete:
            mode = ACL_DELETE;
            name = "DELETE";
            break;
        }
        // The privilege on some columns will do (there are no column DELETE
        // privileges): the statement checks each column it reads or writes.
        const bool ok = pg_call([&]() noexcept {
            return pg_class_aclcheck(relation, GetUserId(), mode) == ACLCHECK_OK ||
                   (mode != ACL_DELETE &&
                    pg_attribute_aclcheck_all(relation, GetUserId(), mode, ACLMASK_ANY) == ACLCHECK_OK);
        });
        if (!ok) {
            const char* rel = pg_call([&]() noexcept { return get_rel_name(relation); });
            throw UserError(
                sqlstate::kInsufficientPrivilege,
                "permission denied for table " + std::string(rel != nullptr ? rel : "?"),
                std::string(why) + " needs the " + name + " privilege on it.",
                "Ask its owner to GRANT " + std::string(name) + " on it to role \"" + current_user_name() + "\".");
        }
    }
}

void require_whole_table_privilege(std::uint32_t relation, TablePrivilege privilege, const std::string& why)
{
    bool row_security = false;
    const Oid owner = pg_call([&]() noexcept {
        HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
        if (!HeapTupleIsValid(tup))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("relation with OID %u does not exist", relation),
                            errhint("The relation was dropped meanwhile: run the statement again.")));
        auto* form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup));
        row_security = form->relrowsecurity;
        const Oid o = form->relowner;
        ReleaseSysCache(tup);
        return o;
    });
    if (current_user_has_privileges_of(owner))
        return;
    if (row_security) {
        const char* rel = pg_call([&]() noexcept { return get_rel_name(relation); });
        throw UserError(sqlstate::kInsufficientPrivilege,
                        "permission denied for table " + std::string(rel != nullptr ? rel : "?"),
                        std::string(why) + " covers every row of the table, and row-level security lets role \"" +
                            current_user_name() + "\" see only some of them.",
                        "Run it as the table's owner.");
    }
    const AclMode mode = privilege == TablePrivilege::kSelect   ? ACL_SELECT
                         : privilege == TablePrivilege::kInsert ? ACL_INSERT
                         : privilege == TablePrivilege::kUpdate ? ACL_UPDATE
                                                                : ACL_DELETE;
    const char* name = privilege == TablePrivilege::kSelect   ? "SELECT"
                       : privilege == TablePrivilege::kInsert ? "INSERT"
                       : privilege == TablePrivilege::kUpdate ? "UPDATE"
                                                              : "DELETE";
    if (!pg_call([&]() noexcept { return pg_class_aclcheck(relation, GetUserId(), mode) == ACLCHECK_OK; })) {
        const char* rel = pg_call([&]() noexcept { return get_rel_name(relation); });
        throw UserError(
            sqlstate::kInsufficientPrivilege, "permission denied for table " + std::string(rel != nullptr ? rel : "?"),
            std::string(why) + " needs the " + name + " privilege on the whole table.",
            "Ask its owner to GRANT " + std::string(name) + " on it to role \"" + current_user_name() + "\".");
    }
}

namespace {
Oid extension_owner()
{
    return pg_call([]() noexcept {
        HeapTuple tup = SearchSysCache1(NAMESPACENAME, CStringGetDatum("idem"));
        if (!HeapTupleIsValid(tup))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_SCHEMA), errmsg("schema \"idem\" does not exist"),
                            errhint("CREATE EXTENSION pg_idempotent creates it in this database.")));
        Oid owner = reinterpret_cast<Form_pg_namespace>(GETSTRUCT(tup))->nspowner;
        ReleaseSysCache(tup);
        return owner;
    });
}
}  // namespace

namespace {
// The switch to another user id, undone when the scope ends (RAII), on
// every path: a caller may catch the error (a subtransaction that is rolled
// back, or a UserError in C++) and go on as itself. The destructor calls
// SetUserIdAndSecContext, which only assigns two variables (what
// AbortTransaction runs to undo a SECURITY DEFINER switch).
class UserIdScope {
public:
    explicit UserIdScope(Oid user) noexcept
    {
        GetUserIdAndSecContext(&saved_user_, &saved_context_);
        SetUserIdAndSecContext(user, saved_context_ | SECURITY_LOCAL_USERID_CHANGE);
    }
    ~UserIdScope() { SetUserIdAndSecContext(saved_user_, saved_context_); }
    UserIdScope(const UserIdScope&) = delete;
    UserIdScope& operator=(const UserIdScope&) = delete;

private:
    Oid saved_user_ = InvalidOid;
    int saved_context_ = 0;
};
}  // namespace

void as_extension_owner(const std::function<void()>& fn)
{
    const Oid owner = extension_owner();
    // The caller's search_path must not choose an operator, a function or a
    // type for a statement the owner runs (JOIN ... USING, IN, implicit
    // casts pick them by name): pinned for as long as the switch lasts.
    const SettingsScope pinned(Settings{{"search_path", "pg_catalog, pg_temp"}});
    const UserIdScope as_owner(owner);
    fn();
}

void as_extension_owner_without_sql(const std::function<void()>& fn)
{
    const UserIdScope as_owner(extension_owner());
    fn();
}

}  // namespace pg_idempotent::pg
