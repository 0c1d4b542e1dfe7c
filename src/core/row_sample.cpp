#include "core/row_sample.hpp"

#include <algorithm>
#include <limits>

namespace pg_idempotent::core {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void put_u64_hex(std::string& out, std::uint64_t v)
{
    for (int byte = 0; byte < 8; ++byte) {
        const auto b = static_cast<unsigned>((v >> (8 * byte)) & 0xffu);
        out.push_back(kHexDigits[b >> 4]);
        out.push_back(kHexDigits[b & 0xfu]);
    }
}

int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

std::optional<std::uint64_t> get_u64_hex(const std::string& in, std::size_t at)
{
    std::uint64_t v = 0;
    for (int byte = 0; byte < 8; ++byte) {
        const int high = hex_value(in[at + 2 * static_cast<std::size_t>(byte)]);
        const int low = hex_value(in[at + 2 * static_cast<std::size_t>(byte) + 1]);
        if (high < 0 || low < 0)
            return std::nullopt;
        v |= static_cast<std::uint64_t>(high * 16 + low) << (8 * byte);
    }
    return v;
}

}  // namespace

RowSampleBuilder::RowSampleBuilder() : entries_(new std::uint64_t[kCapacity]) {}

void RowSampleBuilder::add(const Digest128& row) noexcept
{
    if ((row.lo & mask_) != 0)
        return;
    if (size_ == kCapacity) {
        make_room();
        if ((row.lo & mask_) != 0)
            return;  // the bucket shrank past it
    }
    entries_[size_++] = row.lo;
}

void RowSampleBuilder::make_room() noexcept
{
    std::uint64_t* begin = entries_.get();
    // Repeated rows give repeated entries: one is enough.
    std::sort(begin, begin + size_);
    size_ = static_cast<std::size_t>(std::unique(begin, begin + size_) - begin);
    // Halve the bucket until at most half the room is used. Distinct entries
    // all in a bucket of modulus 2^k have k low zero bits, so the loop ends:
    // at modulus 2^64 only the entry 0 could remain.
    while (size_ > kCapacity / 2 && mask_ != std::numeric_limits<std::uint64_t>::max()) {
        mask_ = mask_ * 2 + 1;
        size_ = static_cast<std::size_t>(
            std::remove_if(begin, begin + size_, [this](std::uint64_t e) { return (e & mask_) != 0; }) - begin);
    }
}

std::string RowSampleBuilder::hex() const
{
    std::vector<std::uint64_t> sorted(entries_.get(), entries_.get() + size_);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string out;
    out.reserve(16 * (sorted.size() + 1));
    put_u64_hex(out, mask_ + 1);  // 0 stands for 2^64
    for (std::uint64_t e : sorted)
        put_u64_hex(out, e);
    return out;
}

std::optional<RowSample> RowSample::parse(const std::string& hex)
{
    if (hex.size() < 16 || hex.size() % 16 != 0)
        return std::nullopt;
    const auto modulus = get_u64_hex(hex, 0);
    if (!modulus || (*modulus & (*modulus - 1)) != 0)
        return std::nullopt;  // not a power of two (0 is 2^64)
    RowSample sample;
    sample.mask_ = *modulus - 1;
    sample.entries_.reserve(hex.size() / 16 - 1);
    for (std::size_t at = 16; at < hex.size(); at += 16) {
        const auto e = get_u64_hex(hex, at);
        if (!e || (*e & sample.mask_) != 0 || (!sample.entries_.empty() && *e <= sample.entries_.back()))
            return std::nullopt;
        sample.entries_.push_back(*e);
    }
    return sample;
}

bool RowSample::excludes(const Digest128& row) const noexcept
{
    return (row.lo & mask_) == 0 && !std::binary_search(entries_.begin(), entries_.end(), row.lo);
}

}  // namespace pg_idempotent::core
