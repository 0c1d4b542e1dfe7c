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

bool RowSample::holds(std::uint64_t lo) const noexcept
{
    // The entries are hashes, spread evenly over 64 bits: lo's place among
    // them is near lo / 2^64 of their count (within about its square root,
    // 64 of 4,096), so the search starts in that window.
    const std::size_t n = entries_.size();
    if (n == 0)
        return false;
    constexpr std::size_t kRadius = 96;
    // (lo / 2^32) * n / 2^32: no overflow below 2^32 entries.
    const std::size_t guess = static_cast<std::size_t>(((lo >> 32) * n) >> 32);
    const std::size_t low = guess > kRadius ? guess - kRadius : 0;
    const std::size_t high = std::min(n, guess + kRadius + 1);
    const std::uint64_t* e = entries_.data();
    const bool in_window = (low == 0 || e[low] <= lo) && (high == n || e[high - 1] >= lo);
    const std::uint64_t* found = in_window ? first_not_below(e + low, high - low, lo) : first_not_below(e, n, lo);
    return found != e + n && *found == lo;
}

}  // namespace pg_idempotent::core
