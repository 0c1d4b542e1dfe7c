// Who may use idem's state: the check every state function makes before it
// switches to the extension owner (see pg/roles.hpp).
#pragma once

#include <optional>
#include <string>

#include "pg/spi.hpp"

namespace pg_idempotent {

// The four kinds of state a grant names (idem.usage_grants.kind): a grant
// for keys in scope "a.b" says nothing about the job "a.b" or a dataset.
enum class ScopeKind { kKeys, kCheckpoints, kDataset, kEffects };

// UserError 42501 unless the calling role is a superuser or has (directly or
// through a role it has the privileges of) a row in idem.usage_grants for
// this kind and scope, or the every-scope grant. Datasets are named by their
// quoted, schema-qualified name ("sales"."Daily"), so no two datasets share a
// scope. Decisions are cached across transactions until the grant table or
// a role changes (pg/grant_invalidation.hpp). legacy_scope: the name
// 0.6.0's grants used, if another (datasets: schema.view unquoted).
void check_scope_usage(pg::SpiSession& spi, ScopeKind kind, const std::string& scope,
                       const std::optional<std::string>& legacy_scope = std::nullopt);

}  // namespace pg_idempotent
