// idem._boundary_probe: a superuser-only diagnostic that drives the C++/
// PostgreSQL boundary from SQL, so the tests can prove its promises: a
// PostgreSQL error raised under live C++ objects reaches the client intact
// and runs their destructors; a C++ exception becomes an ERROR; a cancel
// stops a C++ loop. Not part of the public API (see docs/boundary.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pg_idempotent {

std::int64_t boundary_probe(const std::string& action, const std::optional<std::string>& sql);

}  // namespace pg_idempotent
