#include "core/row_image.hpp"

#include <algorithm>
#include <cstring>
#include <new>

// Header-only use of Debian's libxxhash-dev: the extension carries no runtime
// dependency, and XXH3 inlines into the per-row loop.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace pg_idempotent::core {

struct RowHasher::State {
    XXH3_state_t xxh;
};

namespace {
Digest128 from_xxh(XXH128_hash_t h) noexcept
{
    return Digest128{h.high64, h.low64};
}
}  // namespace

RowHasher::RowHasher() noexcept = default;

bool RowHasher::ensure_state() noexcept
{
    if (!state_) {
        state_.reset(new (std::nothrow) State);
        if (!state_) {
            failed_ = true;
            return false;
        }
    }
    return true;
}
RowHasher::~RowHasher() = default;

// A column that does not fit in what is left of the buffer: the same bytes,
// through append(), which spills into the streaming state.
void RowHasher::add_slow(const void* data, std::size_t length, bool is_null) noexcept
{
    if (is_null) {
        const unsigned char tag = 0x00;
        append(&tag, 1);
        return;
    }
    unsigned char head[kValueHeader];
    head[0] = 0x01;
    put_u32le(head + 1, static_cast<std::uint32_t>(length));
    append(head, sizeof head);
    append(data, length);
}

Digest128 RowHasher::end_row() noexcept
{
    if (!streaming_)
        return from_xxh(XXH3_128bits(buffer_, used_));
    flush();
    if (failed_)
        return Digest128{};
    return from_xxh(XXH3_128bits_digest(&state_->xxh));
}

Digest128 RowHasher::hash_image(const void* data, std::size_t length) noexcept
{
    return from_xxh(XXH3_128bits(data, length));
}

void RowHasher::append(const void* data, std::size_t length) noexcept
{
    const auto* bytes = static_cast<const unsigned char*>(data);
    while (length > 0) {
        if (used_ == kBufferSize)
            flush();
        const std::size_t n = std::min(length, kBufferSize - used_);
        std::memcpy(buffer_ + used_, bytes, n);
        used_ += n;
        bytes += n;
        length -= n;
    }
}

void RowHasher::flush() noexcept
{
    if (!ensure_state()) {
        used_ = 0;
        return;
    }
    if (!streaming_) {
        XXH3_128bits_reset(&state_->xxh);
        streaming_ = true;
    }
    XXH3_128bits_update(&state_->xxh, buffer_, used_);
    used_ = 0;
}

}  // namespace pg_idempotent::core
