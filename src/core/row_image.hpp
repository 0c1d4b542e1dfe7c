// The canonical image of a row, version 1 (docs/row-image.md), and its hash.
//
// Pure C++: the boundary layer hands over each column as "NULL" or "these
// bytes" (the detoasted stored bytes that PostgreSQL's image comparison `*=`
// compares); this class turns them into the one encoding every feature uses:
//
//   row    := u32le(column count) column*
//   column := 0x00                        -- NULL
//           | 0x01 u32le(length) bytes    -- a value's stored image
//
// and hashes it with XXH3-128 (seed 0). Every member that runs per row is
// noexcept: it is called from inside PostgreSQL's executor callbacks, where a
// C++ exception must never escape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/digest.hpp"

namespace pg_idempotent::core {

class RowHasher {
public:
    RowHasher() noexcept;  // no allocation: cheap enough to make per row
    ~RowHasher();
    RowHasher(const RowHasher&) = delete;
    RowHasher& operator=(const RowHasher&) = delete;

    // The per-column members are inline: they run once per column of every
    // row a digest reads, and a row that fits the buffer is laid out with
    // plain stores and one short copy per value (the executor's receiver calls
    // them in a tight loop). Anything that does not fit takes append().
    void begin_row(std::uint32_t column_count) noexcept
    {
        streaming_ = false;
        failed_ = false;
        put_u32le(buffer_, column_count);
        used_ = 4;
    }
    void add_null() noexcept
    {
        if (used_ < kBufferSize)
            buffer_[used_++] = 0x00;
        else
            add_slow(nullptr, 0, true);
    }
    void add_value(const void* data, std::size_t length) noexcept
    {
        if (length <= kBufferSize - kValueHeader && used_ <= kBufferSize - kValueHeader - length) {
            unsigned char* p = buffer_ + used_;
            p[0] = 0x01;
            put_u32le(p + 1, static_cast<std::uint32_t>(length));
            copy_bytes(p + kValueHeader, static_cast<const unsigned char*>(data), length);
            used_ += kValueHeader + length;
        } else {
            add_slow(data, length, false);
        }
    }
    // A value of exactly N bytes (N a constant: 1, 2, 4, 8, ...): the same
    // image as add_value(data, N), with the copy a fixed-size store.
    template <std::size_t N>
    void add_fixed(const void* data) noexcept
    {
        static_assert(N <= kBufferSize - kValueHeader);
        if (used_ <= kBufferSize - kValueHeader - N) {
            unsigned char* p = buffer_ + used_;
            p[0] = 0x01;
            put_u32le(p + 1, static_cast<std::uint32_t>(N));
            std::memcpy(p + kValueHeader, data, N);
            used_ += kValueHeader + N;
        } else {
            add_slow(data, N, false);
        }
    }
    Digest128 end_row() noexcept;
    // False when a row longer than the buffer could not get its streaming
    // state (out of memory): the digest of that row is not valid.
    bool ok() const noexcept { return !failed_; }

    // The whole v1 encoding of a row already laid out in memory (tests).
    static Digest128 hash_image(const void* data, std::size_t length) noexcept;

private:
    static constexpr std::size_t kValueHeader = 5;  // 0x01 and u32le(length)
    static void put_u32le(unsigned char* out, std::uint32_t v) noexcept
    {
        out[0] = static_cast<unsigned char>(v);
        out[1] = static_cast<unsigned char>(v >> 8);
        out[2] = static_cast<unsigned char>(v >> 16);
        out[3] = static_cast<unsigned char>(v >> 24);
    }
    // memcpy for the short values rows are made of: fixed-size loads and
    // stores that may overlap, all within [src, src + n), so no byte outside
    // the value is read. A variable-length std::memcpy compiles to a call or
    // to rep movs, either of which costs more than the copy for a few bytes.
    // n bytes, sizeof(Word) <= n <= 2 * sizeof(Word): the first and the last
    // word, which overlap in the middle. Both are loaded before either is
    // stored.
    template <typename Word>
    static void copy_head_and_tail(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept
    {
        Word head;
        Word tail;
        std::memcpy(&head, src, sizeof(Word));
        std::memcpy(&tail, src + n - sizeof(Word), sizeof(Word));
        std::memcpy(dst, &head, sizeof(Word));
        std::memcpy(dst + n - sizeof(Word), &tail, sizeof(Word));
    }
    static void copy_bytes(unsigned char* dst, const unsigned char* src, std::size_t n) noexcept
    {
        if (n > 64) {
            std::memcpy(dst, src, n);
        } else if (n >= 16) {
            std::size_t i = 0;
            for (; i + 16 < n; i += 16)
                std::memcpy(dst + i, src + i, 16);
            std::memcpy(dst + n - 16, src + n - 16, 16);
        } else if (n >= 8) {
            copy_head_and_tail<std::uint64_t>(dst, src, n);
        } else if (n >= 4) {
            copy_head_and_tail<std::uint32_t>(dst, src, n);
        } else if (n > 0) {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
    }
    void add_slow(const void* data, std::size_t length, bool is_null) noexcept;
    void append(const void* data, std::size_t length) noexcept;
    void flush() noexcept;
    bool ensure_state() noexcept;  // allocates the streaming state on first use

    // Rows that fit in the buffer are hashed in one shot; longer rows spill
    // into a streaming state, which gives the same hash for the same bytes.
    static constexpr std::size_t kBufferSize = 8192;
    unsigned char buffer_[kBufferSize];
    std::size_t used_ = 0;
    bool streaming_ = false;
    bool failed_ = false;  // the streaming state could not be allocated
    struct State;
    std::unique_ptr<State> state_;  // only for rows longer than the buffer
};

}  // namespace pg_idempotent::core
