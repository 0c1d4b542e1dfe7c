#include "keys/claimed_tokens.hpp"

#include <map>
#include <utility>

namespace pg_idempotent::keys {

namespace {

using Tokens = std::map<std::pair<std::string, std::string>, std::int64_t>;

Tokens& tokens()
{
    static Tokens t;
    return t;
}

// A bound, not an expectation: a session that claims more keys than this
// forgets the oldest ones, whose writes without a token are then unfenced
// as before 0.9.0. Tokens grow, so the smallest is the oldest.
constexpr std::size_t kMaxRemembered = 4096;

}  // namespace

void remember_claimed_token(const std::string& scope, const std::string& key, std::int64_t token)
{
    Tokens& t = tokens();
    t[{scope, key}] = token;
    if (t.size() <= kMaxRemembered)
        return;
    auto oldest = t.begin();
    for (auto it = t.begin(); it != t.end(); ++it)
        if (it->second < oldest->second)
            oldest = it;
    t.erase(oldest);
}

std::optional<std::int64_t> claimed_token(const std::string& scope, const std::string& key)
{
    const Tokens& t = tokens();
    const auto it = t.find({scope, key});
    if (it == t.end())
        return std::nullopt;
    return it->second;
}

}  // namespace pg_idempotent::keys
