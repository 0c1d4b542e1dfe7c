#include "core/effect_lane.hpp"

namespace pg_idempotent::core {

namespace {

constexpr std::uint32_t kFnvOffset = 2166136261u;
constexpr std::uint32_t kFnvPrime = 16777619u;

std::uint32_t fnv1a(std::uint32_t h, const std::string& bytes) noexcept
{
    for (const char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= kFnvPrime;
    }
    return h;
}

}  // namespace

std::int32_t effect_lane(const std::string& scope, const std::string& kind) noexcept
{
    std::uint32_t h = fnv1a(kFnvOffset, scope);
    h ^= 0u;  // the NUL between scope and kind
    h *= kFnvPrime;
    h = fnv1a(h, kind);
    // The same bits as a signed int (an int column).
    return static_cast<std::int32_t>(h);
}

}  // namespace pg_idempotent::core
