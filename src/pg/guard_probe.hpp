// idem._boundary_probe: a superuser-only diagnostic that drives the C++/
// PostgreSQL boundary from SQL, so the tests can prove its promises: a
// PostgreSQL error raised under live C++ objects reaches the client intact
// and runs their destructors; a C++ exception becomes an ERROR; a cancel
// stops a C++ loop. Not part of the public API (see docs/boundary.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

struct FunctionCallInfoBaseData;  // PostgreSQL's, opaque here

namespace pg_idempotent {

// The action "longjmp": raises an ERROR straight through cpp_entry, as a
// shim's own PostgreSQL call may (plain C frames, no pg_call, nothing with a
// destructor alive). Call first in the shim, before any C++ object exists;
// returns when the action is another one.
void boundary_probe_longjmp(FunctionCallInfoBaseData* fcinfo);

std::int64_t boundary_probe(const std::string& action, const std::optional<std::string>& sql);

}  // namespace pg_idempotent
