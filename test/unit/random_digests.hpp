// Random row hashes for the unit tests of the digest and the sample: n
// reproducible Digest128 values from seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/digest.hpp"

namespace pg_idempotent::test {

inline std::vector<core::Digest128> random_digests(std::size_t n, std::uint32_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<core::Digest128> out(n);
    for (core::Digest128& d : out)
        d = core::Digest128{rng(), rng()};
    return out;
}

}  // namespace pg_idempotent::test
