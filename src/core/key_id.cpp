#include "core/key_id.hpp"

#include "core/digest.hpp"
#include "core/md5.hpp"

namespace pg_idempotent::core {

bool key_is_inline(const std::string& key) noexcept
{
    return key.size() <= kInlineKeyBytes && (key.empty() || key[0] != kDigestMarker);
}

std::string key_id(const std::string& key)
{
    if (key_is_inline(key))
        return key;
    unsigned char digest[16];
    md5(key.data(), key.size(), digest);
    return std::string(1, kDigestMarker) + to_hex(from_bytes(digest));
}

}  // namespace pg_idempotent::core
