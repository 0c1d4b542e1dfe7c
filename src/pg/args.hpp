// Reading SQL arguments into C++ values and making SQL results, for the entry
// shims. NULL handling is explicit: every function of the extension is
// non-strict and says which NULL it refused (22004) instead of returning NULL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "pg/postgres.hpp"
#include "pg/query_params.hpp"
#include "pg/values.hpp"

namespace pg_idempotent::pg {

// UserError 22004 "<name> must not be NULL" when argument n is NULL.
void require_arg(FunctionCallInfo fcinfo, int n, const char* name);

std::optional<std::string> arg_text(FunctionCallInfo fcinfo, int n);
std::optional<std::uint32_t> arg_oid(FunctionCallInfo fcinfo, int n);
std::optional<std::int32_t> arg_int4(FunctionCallInfo fcinfo, int n);
// nullopt also when the call has fewer than n + 1 arguments (an older SQL
// declaration of the function, before ALTER EXTENSION ... UPDATE).
std::optional<std::int64_t> arg_int8(FunctionCallInfo fcinfo, int n);
std::optional<bool> arg_bool(FunctionCallInfo fcinfo, int n);
// A text[]; NULL elements are refused (22004, naming the argument).
std::optional<std::vector<std::string>> arg_text_array(FunctionCallInfo fcinfo, int n, const char* name);

// A text argument naming one column, or several as a text[] literal
// ('{updated_at,_loaded_at}': a value that starts with "{" is read as one,
// as array input reads it; a column whose name starts with "{" is given as
// '{"{name"}'). Empty when NULL; 22004 for a NULL element, 22023 for an
// empty list.
std::vector<std::string> arg_name_list(FunctionCallInfo fcinfo, int n, const char* name);

// A regclass[] / oid[] argument (NULL elements refused, 22004).
std::vector<std::uint32_t> arg_oid_array(FunctionCallInfo fcinfo, int n, const char* name);

// The v1 row digest of a composite argument (a whole row).
core::Digest128 arg_record_digest(FunctionCallInfo fcinfo, int n);

// An anyelement argument with its actual type (NULL keeps the type).
TypedValue arg_value(FunctionCallInfo fcinfo, int n);

// An idem.query_params argument (made by idem.params(...)): the values to
// bind to $1, $2, ..., each read back from its canonical text by its type's
// input function, as the caller. Empty when NULL or when the call has fewer
// than n + 1 arguments (an older SQL declaration of the function).
QueryParams arg_query_params(FunctionCallInfo fcinfo, int n);

// idem.params(VARIADIC "any"): the arguments' types and canonical texts
// (values.hpp) as an idem.query_params, so that the value reads back the
// same in any session. An untyped literal is text.
Datum query_params_result(FunctionCallInfo fcinfo);

Datum text_result(const std::string& s);
Datum jsonb_result(const std::string& json_text);
// An interval argument as text that interval input reads back exactly
// (its output function; every IntervalStyle is accepted on input).
std::optional<std::string> arg_interval_text(FunctionCallInfo fcinfo, int n);
// A jsonb argument as its text form (lossless for jsonb).
std::optional<std::string> arg_jsonb_text(FunctionCallInfo fcinfo, int n);
Datum uuid_result(const core::Digest128& d);

}  // namespace pg_idempotent::pg
