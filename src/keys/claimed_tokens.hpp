// The fencing tokens this session's own leased claims drew, by key, so that
// its writes without a token are fenced all the same: after another worker
// took the key over (a newer token), this session's complete or save_point
// is refused (ID004) as if it had passed its token. A session that never
// claimed the key writes without a token as before (docs/keys.md, Fencing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pg_idempotent::keys {

void remember_claimed_token(const std::string& scope, const std::string& key, std::int64_t token);
// The token this session's last leased claim of the key drew, if any.
std::optional<std::int64_t> claimed_token(const std::string& scope, const std::string& key);

}  // namespace pg_idempotent::keys
