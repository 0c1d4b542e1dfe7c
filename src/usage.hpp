// Who may use idem's state: the check every state function makes before it
// switches to the extension owner (see pg/identity.hpp).
#pragma once

#include <string>

#include "pg/spi.hpp"

namespace pg_idempotent {

// UserError 42501 unless the calling role is a superuser or has (directly or
// through a role it has the privileges of) a row in idem.usage_grants for
// this scope or for every scope. what names the scope in the message
// ("idempotency keys in scope", "the checkpoint of job"). Cached for the rest
// of the transaction.
void check_scope_usage(pg::SpiSession& spi, const std::string& scope, const char* what);

}  // namespace pg_idempotent
