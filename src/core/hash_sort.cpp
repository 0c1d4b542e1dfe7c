#include "core/hash_sort.hpp"

#include <utility>

namespace pg_idempotent::core {

namespace {

// Below this, insertion sort: a bucket of a few dozen fits in a cache line
// or two, and a radix pass would cost 256 counters.
constexpr std::size_t kInsertionMax = 48;

void insertion_sort(std::uint64_t* a, std::size_t n) noexcept
{
    for (std::size_t i = 1; i < n; ++i) {
        const std::uint64_t v = a[i];
        std::size_t j = i;
        for (; j > 0 && a[j - 1] > v; --j)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

unsigned digit(std::uint64_t v, int shift) noexcept
{
    return static_cast<unsigned>(v >> shift) & 0xffU;
}

// One byte (at shift) of every hash puts it in its bucket, in place; then
// each bucket is sorted by the next byte down.
void radix_sort(std::uint64_t* a, std::size_t n, int shift) noexcept
{
    if (n <= kInsertionMax) {
        insertion_sort(a, n);
        return;
    }
    std::size_t next[256] = {};
    std::size_t end[256];
    for (std::size_t i = 0; i < n; ++i)
        ++next[digit(a[i], shift)];
    std::size_t at = 0;
    for (unsigned b = 0; b < 256; ++b) {
        const std::size_t size = next[b];
        next[b] = at;
        at += size;
        end[b] = at;
    }
    for (unsigned b = 0; b < 256; ++b) {
        while (next[b] < end[b]) {
            std::uint64_t v = a[next[b]];
            for (unsigned d = digit(v, shift); d != b; d = digit(v, shift))
                std::swap(v, a[next[d]++]);
            a[next[b]++] = v;
        }
    }
    if (shift == 0)
        return;
    std::size_t begin = 0;
    for (unsigned b = 0; b < 256; ++b) {
        radix_sort(a + begin, end[b] - begin, shift - 8);
        begin = end[b];
    }
}

}  // namespace

void sort_hashes(std::uint64_t* hashes, std::size_t count) noexcept
{
    radix_sort(hashes, count, 56);
}

}  // namespace pg_idempotent::core
