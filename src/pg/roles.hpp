// Who is calling, what they may do, and running idem's own state work as the
// extension owner.
//
// idem's state tables are closed to PUBLIC. The functions that touch them are
// SQL-level SECURITY INVOKER C functions that first check the caller (who may
// use which scope: idem.usage_grants) and then switch to the owner of schema
// idem for their own fixed, schema-qualified SQL: what SECURITY DEFINER does,
// but with the caller still known for the check. No caller SQL ever runs while
// switched.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

namespace pg_idempotent::pg {

std::uint32_t current_user_id();
std::string current_user_name();
bool current_user_is_superuser();
// Whether the role still exists (a session's role can be dropped while the
// session is open).
bool role_exists(std::uint32_t role);
// The role's name (its OID as text when it no longer exists).
std::string role_name(std::uint32_t role);
// Whether the current user has the privileges of role (is it, or a member
// that inherits it; superusers have every role's).
bool current_user_has_privileges_of(std::uint32_t role);

// The privileges a table function checks before it locks or reads anything.
enum class TablePrivilege { kSelect, kInsert, kUpdate, kDelete };
// UserError 42501 "permission denied for table X" unless the current user has
// every privilege given on the relation; why says what needed them.
void require_table_privileges(std::uint32_t relation, std::initializer_list<TablePrivilege> privileges,
                              const std::string& why);
// The same for state that covers a whole table (its tombstones): the owner
// (or a member of the owning role) passes; anyone else needs the privilege
// on the table itself, not on some columns, and the table must not have
// row-level security, which would give them only some of its rows.
void require_whole_table_privilege(std::uint32_t relation, TablePrivilege privilege, const std::string& why);

// Runs fn as the owner of schema idem (SECURITY_LOCAL_USERID_CHANGE) with
// search_path pinned to pg_catalog, pg_temp, as a SECURITY DEFINER function
// with a SET clause would; both are restored afterwards, also when fn throws.
void as_extension_owner(const std::function<void()>& fn);

// Runs fn as the owner of schema idem, search_path left as it is: only for
// code that runs no SQL statement and looks up no name through search_path
// (claim's direct insert, pg_native/key_row_insert.hpp). Setting and
// restoring search_path costs a claim a twentieth of its time.
void as_extension_owner_without_sql(const std::function<void()>& fn);

}  // namespace pg_idempotent::pg
