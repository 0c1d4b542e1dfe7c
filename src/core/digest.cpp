#include "core/digest.hpp"

namespace pg_idempotent::core {

namespace {
constexpr char kHexDigits[] = "0123456789abcdef";

void append_hex64(std::string& out, std::uint64_t v)
{
    for (int shift = 60; shift >= 0; shift -= 4)
        out.push_back(kHexDigits[(v >> shift) & 0xF]);
}
}  // namespace

std::string to_hex(const Digest128& d)
{
    std::string out;
    out.reserve(32);
    append_hex64(out, d.hi);
    append_hex64(out, d.lo);
    return out;
}

void to_bytes(const Digest128& d, unsigned char out[16]) noexcept
{
    for (int i = 0; i < 8; ++i) {
        out[i] = static_cast<unsigned char>(d.hi >> (56 - 8 * i));
        out[8 + i] = static_cast<unsigned char>(d.lo >> (56 - 8 * i));
    }
}

Digest128 from_bytes(const unsigned char in[16]) noexcept
{
    Digest128 d{0, 0};
    for (int i = 0; i < 8; ++i) {
        d.hi = (d.hi << 8) | in[i];
        d.lo = (d.lo << 8) | in[8 + i];
    }
    return d;
}

void MultisetDigest::merge(const MultisetDigest& other) noexcept
{
    const std::uint64_t lo = sum_.lo + other.sum_.lo;
    const std::uint64_t carry = lo < sum_.lo ? 1 : 0;
    sum_.lo = lo;
    sum_.hi += other.sum_.hi + carry;
    count_ += other.count_;
}

MultisetDigest MultisetDigest::from_parts(const Digest128& sum, std::uint64_t count) noexcept
{
    MultisetDigest d;
    d.sum_ = sum;
    d.count_ = count;
    return d;
}

std::uint64_t digest_text_count(const std::string& text) noexcept
{
    const std::string prefix = std::string(kChecksumFormat) + ":";
    if (text.compare(0, prefix.size(), prefix) != 0)
        return 0;
    std::uint64_t count = 0;
    std::size_t i = prefix.size();
    bool digits = false;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        count = count * 10 + static_cast<std::uint64_t>(text[i] - '0');
        digits = true;
    }
    return digits && i < text.size() && text[i] == ':' ? count : 0;
}

std::string MultisetDigest::text() const
{
    std::string out = kChecksumFormat;
    out += ':';
    out += std::to_string(count_);
    out += ':';
    out += to_hex(sum_);
    return out;
}

void digest_decimal_to(const Digest128& value, char* out) noexcept
{
    unsigned __int128 v = (static_cast<unsigned __int128>(value.hi) << 64) | value.lo;
    char reversed[kDigestDecimalSize];
    std::size_t n = 0;
    do {
        reversed[n++] = static_cast<char>('0' + static_cast<int>(v % 10));
        v /= 10;
    } while (v != 0);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = reversed[n - 1 - i];
    out[n] = '\0';
}

std::string digest_decimal(const Digest128& value)
{
    char text[kDigestDecimalSize];
    digest_decimal_to(value, text);
    return text;
}

std::optional<Digest128> digest_from_decimal(const std::string& decimal) noexcept
{
    if (decimal.empty())
        return std::nullopt;
    unsigned __int128 v = 0;  // arithmetic modulo 2^128, as the digest's sum
    for (const char c : decimal) {
        if (c < '0' || c > '9')
            return std::nullopt;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    return Digest128{static_cast<std::uint64_t>(v >> 64), static_cast<std::uint64_t>(v)};
}

}  // namespace pg_idempotent::core
