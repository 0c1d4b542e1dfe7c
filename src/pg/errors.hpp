// Errors that cross the C++/PostgreSQL boundary, without PostgreSQL headers.
//
// PgError carries a PostgreSQL error captured by pg_call (its ErrorData, so
// SQLSTATE, DETAIL, HINT and CONTEXT survive); UserError is an error the
// extension raises itself. cpp_entry turns both into an ERROR once every C++
// destructor has run.
#pragma once

#include <exception>
#include <string>

struct ErrorData;  // PostgreSQL's, opaque here

namespace pg_idempotent::pg {

class PgError : public std::exception {
public:
    explicit PgError(ErrorData* data) noexcept : data_(data) {}
    ErrorData* data() const noexcept { return data_; }
    const char* what() const noexcept override { return "PostgreSQL error"; }

private:
    ErrorData* data_;  // palloc'd in the entry's memory context
};

// The five-character SQLSTATE of a captured PostgreSQL error.
std::string error_sqlstate(const PgError& error);
// Its primary message and DETAIL ("" when absent).
std::string error_message(const PgError& error);
std::string error_detail(const PgError& error);

// Sends a WARNING to the client (it does not interrupt anything).
void warning(const std::string& message, const std::string& detail = {});
// Sends a NOTICE with a HINT (a deprecated argument, say).
void notice(const std::string& message, const std::string& hint = {});

// The SQLSTATEs the extension raises, as their five characters. The list with
// their meaning is in docs/errors.md.
namespace sqlstate {
inline constexpr const char* kInvalidParameterValue = "22023";
inline constexpr const char* kNullValueNotAllowed = "22004";
inline constexpr const char* kUndefinedColumn = "42703";
inline constexpr const char* kUndefinedParameter = "42P02";
inline constexpr const char* kWrongObjectType = "42809";
inline constexpr const char* kDatatypeMismatch = "42804";
inline constexpr const char* kSyntaxError = "42601";
inline constexpr const char* kDuplicateColumn = "42701";
inline constexpr const char* kInternalError = "XX000";
inline constexpr const char* kObjectNotInPrerequisiteState = "55000";
inline constexpr const char* kLockNotAvailable = "55P03";
inline constexpr const char* kInsufficientPrivilege = "42501";
inline constexpr const char* kUndefinedTable = "42P01";
inline constexpr const char* kUndefinedObject = "42704";
inline constexpr const char* kDuplicateTable = "42P07";
inline constexpr const char* kSerializationFailure = "40001";
inline constexpr const char* kActiveSqlTransaction = "25001";
inline constexpr const char* kFeatureNotSupported = "0A000";
inline constexpr const char* kCheckViolation = "23514";
inline constexpr const char* kDependentObjectsStillExist = "2BP01";
inline constexpr const char* kInvalidSchemaName = "3F000";
inline constexpr const char* kInvalidName = "42602";
inline constexpr const char* kNameTooLong = "42622";
inline constexpr const char* kUndefinedFunction = "42883";
inline constexpr const char* kGeneratedAlways = "428C9";
inline constexpr const char* kInvalidTableDefinition = "42P16";
inline constexpr const char* kProgramLimitExceeded = "54000";
inline constexpr const char* kCardinalityViolation = "21000";
inline constexpr const char* kNotNullViolation = "23502";
inline constexpr const char* kUniqueViolation = "23505";
inline constexpr const char* kForeignKeyViolation = "23503";
inline constexpr const char* kExclusionViolation = "23P01";
// The extension's own class "ID" (implementation-defined classes start with
// I-Z): an idempotency key reused for a different request.
inline constexpr const char* kFingerprintMismatch = "ID001";
// A job whose second run changed what its first run wrote
// (idem.assert_rerun_safe).
inline constexpr const char* kNotRerunSafe = "ID002";
// Two different keys of one scope with the same MD5 (idem.keys finds a key by
// md5(key)): the second is refused instead of being taken for the first.
inline constexpr const char* kKeyHashCollision = "ID003";
// A leased key's fencing token that no longer owns the key: taken over by
// another worker, completed, or forgotten (save_point, complete,
// check_lease given a token).
inline constexpr const char* kLeaseLost = "ID004";
// A merge kept to the partitions of its batch found source rows of others
// (a source that changed since it was read): caught by the merge, which
// runs again over every partition; never reaches a caller.
inline constexpr const char* kPruneMissed = "ID901";
// An event appended again with other content than the one already there
// (idem.append; also in its statement's text as 'ID005').
inline constexpr const char* kAppendConflict = "ID005";
// ID006, a merge source row at the target row's version with other content
// (21000 before 0.8.0), is raised only by the statement merge writes
// (merge_sql.cpp, as 'ID006' in its text): no C++ code names it.
// ID007, idem.assert_rerun_safe: run 1 changed none of the watched
// tables, so nothing was proven.
inline constexpr const char* kNothingProven = "ID007";
}  // namespace sqlstate

class UserError : public std::exception {
public:
    UserError(const char* code, std::string message, std::string detail = {}, std::string hint = {})
        : code_(code), message_(std::move(message)), detail_(std::move(detail)), hint_(std::move(hint))
    {
    }
    const char* code() const noexcept { return code_; }
    const std::string& message() const noexcept { return message_; }
    const std::string& detail() const noexcept { return detail_; }
    const std::string& hint() const noexcept { return hint_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    const char* code_;
    std::string message_;
    std::string detail_;
    std::string hint_;
};

}  // namespace pg_idempotent::pg
