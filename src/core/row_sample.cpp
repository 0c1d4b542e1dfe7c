#include "core/row_sample.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace pg_idempotent::core {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// Each byte's value as a hex digit, -1 if it is none: a table, as a
// rerun's check parses the whole sample (65,552 digits) before its first row.
struct HexTable {
    std::int8_t value[256];
    constexpr HexTable() : value()
    {
        for (int c = 0; c < 256; ++c)
            value[c] = c >= '0' && c <= '9'   ? static_cast<std::int8_t>(c - '0')
                       : c >= 'a' && c <= 'f' ? static_cast<std::int8_t>(c - 'a' + 10)
                       : c >= 'A' && c <= 'F' ? static_cast<std::int8_t>(c - 'A' + 10)
                                              : std::int8_t{-1};
    }
};
constexpr HexTable kHexValues;

std::optional<std::uint64_t> get_u64_hex(const std::string& in, std::size_t at)
{
    std::uint64_t v = 0;
    int bad = 0;
    for (int i = 0; i < 16; ++i) {
        const int digit = kHexValues.value[static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)])];
        bad |= digit;  // negative once any digit is not one
        // Byte i / 2, high digit first: little-endian bytes.
        v |= static_cast<std::uint64_t>(digit & 0xf) << (8 * (i / 2) + (i % 2 == 0 ? 4 : 0));
    }
    if (bad < 0)
        return std::nullopt;
    return v;
}

// The first of entries [first, first + count) not below lo (first + count
// if none): halving without a branch on the comparison, whose outcome a
// hash makes random.
const std::uint64_t* first_not_below(const std::uint64_t* first, std::size_t count, std::uint64_t lo) noexcept
{
    if (count == 0)
        return first;
    while (count > 1) {
        const std::size_t half = count / 2;
        first = first[half - 1] < lo ? first + half : first;
        count -= half;
    }
    return *first < lo ? first + 1 : first;
}

}  // namespace

void RowSampleBuilder::add_entry(std::uint64_t entry) noexcept
{
    if ((entry & mask_) != 0)
        return;
    if (size_ == kCapacity) {
        make_room();
        if ((entry & mask_) != 0)
            return;  // the bucket shrank past it
    }
    entries_[size_++] = entry;
}

void RowSampleBuilder::keep_bucket() noexcept
{
    size_ = static_cast<std::size_t>(
        std::remove_if(entries_, entries_ + size_, [this](std::uint64_t e) { return (e & mask_) != 0; }) - entries_);
}

void RowSampleBuilder::make_room() noexcept
{
    // Repeated rows give repeated entries: one is enough.
    std::sort(entries_, entries_ + size_);
    size_ = static_cast<std::size_t>(std::unique(entries_, entries_ + size_) - entries_);
    // Halve the bucket until at most half the room is used. Distinct entries
    // all in a bucket of modulus 2^k have k low zero bits, so the loop ends:
    // at modulus 2^64 only the entry 0 could remain.
    while (size_ > kCapacity / 2 && mask_ != std::numeric_limits<std::uint64_t>::max()) {
        mask_ = mask_ * 2 + 1;
        keep_bucket();
    }
}

void RowSampleBuilder::merge(const RowSampleBuilder& other) noexcept
{
    // Every row of either multiset in the coarser bucket is in that side's
    // entries (buckets only shrink), so it is in the merged sample.
    if (other.mask_ > mask_) {
        mask_ = other.mask_;
        keep_bucket();
    }
    for (std::size_t i = 0; i < other.size_; ++i)
        add_entry(other.entries_[i]);
}

void RowSampleBuilder::serialize(unsigned char* out) const noexcept
{
    auto put = [&out](std::uint64_t v) {
        for (int byte = 0; byte < 8; ++byte)
            *out++ = static_cast<unsigned char>(v >> (8 * byte));
    };
    put(mask_ + 1);  // 0 stands for 2^64
    for (std::size_t i = 0; i < size_; ++i)
        put(entries_[i]);
}

bool RowSampleBuilder::deserialize(const unsigned char* in, std::size_t length) noexcept
{
    auto get = [&in] {
        std::uint64_t v = 0;
        for (int byte = 0; byte < 8; ++byte)
            v |= static_cast<std::uint64_t>(*in++) << (8 * byte);
        return v;
    };
    mask_ = 0;
    size_ = 0;
    if (length < 8 || length % 8 != 0 || length / 8 - 1 > kCapacity)
        return false;
    const std::uint64_t modulus = get();
    if ((modulus & (modulus - 1)) != 0)
        return false;
    const std::uint64_t mask = modulus - 1;
    for (std::size_t i = 0; i < length / 8 - 1; ++i) {
        const std::uint64_t e = get();
        if ((e & mask) != 0) {
            size_ = 0;
            return false;
        }
        entries_[size_++] = e;
    }
    mask_ = mask;
    return true;
}

std::size_t RowSampleBuilder::hex_into(char* out, std::uint64_t* scratch) const noexcept
{
    std::copy(entries_, entries_ + size_, scratch);
    std::sort(scratch, scratch + size_);
    const auto distinct = static_cast<std::size_t>(std::unique(scratch, scratch + size_) - scratch);
    char* p = out;
    auto put = [&p](std::uint64_t v) {
        for (int byte = 0; byte < 8; ++byte) {
            const auto b = static_cast<unsigned>((v >> (8 * byte)) & 0xffu);
            *p++ = kHexDigits[b >> 4];
            *p++ = kHexDigits[b & 0xfu];
        }
    };
    put(mask_ + 1);  // 0 stands for 2^64
    for (std::size_t i = 0; i < distinct; ++i)
        put(scratch[i]);
    *p = '\0';
    return static_cast<std::size_t>(p - out);
}

std::string RowSampleBuilder::hex() const
{
    std::vector<std::uint64_t> scratch(size_ + 1);
    std::string out(hex_capacity(), '\0');
    out.resize(hex_into(&out[0], scratch.data()));
    return out;
}

std::optional<RowSample> RowSample::parse(const std::string& hex, std::uint64_t at_least)
{
    if (hex.size() < 16 || hex.size() % 16 != 0 || at_least == 0 || at_least > 256 || (at_least & (at_least - 1)) != 0)
        return std::nullopt;
    const auto modulus = get_u64_hex(hex, 0);
    if (!modulus || (*modulus & (*modulus - 1)) != 0)
        return std::nullopt;  // not a power of two (0 is 2^64)
    const std::uint64_t mask = *modulus - 1;
    // The low byte is the first two digits (little-endian): enough to skip
    // an entry outside the narrower bucket.
    const std::uint64_t skip_mask = (at_least - 1) & ~mask & 0xffu;
    RowSample sample;
    sample.mask_ = mask | (at_least - 1);
    sample.entries_.reserve((hex.size() / 16 - 1) / at_least + 16);
    std::uint64_t previous = 0;
    for (std::size_t at = 16; at < hex.size(); at += 16) {
        const int high = kHexValues.value[static_cast<unsigned char>(hex[at])];
        const int low = kHexValues.value[static_cast<unsigned char>(hex[at + 1])];
        if (high < 0 || low < 0)
            return std::nullopt;
        if ((static_cast<std::uint64_t>(high * 16 + low) & skip_mask) != 0)
            continue;
        const auto e = get_u64_hex(hex, at);
        if (!e || (*e & mask) != 0 || (at > 16 && *e <= previous))
            return std::nullopt;
        previous = *e;
        sample.entries_.push_back(*e);
    }
    sample.index_entries();
    return sample;
}

void RowSample::index_entries()
{
    // As many ranges as entries (a power of two, at least 2, at most 2^16):
    // hashes are spread evenly, so a range holds one entry on average.
    unsigned bits = 1;
    while (bits < 16 && (std::size_t{1} << bits) < entries_.size())
        ++bits;
    shift_ = 64 - bits;
    starts_.assign((std::size_t{1} << bits) + 1, 0);
    std::size_t at = 0;
    for (std::size_t k = 0; k < starts_.size(); ++k) {
        while (at < entries_.size() && (entries_[at] >> shift_) < k)
            ++at;
        starts_[k] = static_cast<std::uint32_t>(at);
    }
}

bool RowSample::holds(std::uint64_t lo) const noexcept
{
    const std::size_t k = static_cast<std::size_t>(lo >> shift_);
    const std::uint64_t* e = entries_.data();
    const std::uint64_t* last = e + starts_[k + 1];
    const std::uint64_t* found = first_not_below(e + starts_[k], starts_[k + 1] - starts_[k], lo);
    return found != last && *found == lo;
}

}  // namespace pg_idempotent::core
