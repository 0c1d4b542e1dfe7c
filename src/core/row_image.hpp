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
#include <memory>

#include "core/digest.hpp"

namespace pg_idempotent::core {

class RowHasher {
public:
    RowHasher() noexcept;  // no allocation: cheap enough to make per row
    ~RowHasher();
    RowHasher(const RowHasher&) = delete;
    RowHasher& operator=(const RowHasher&) = delete;

    void begin_row(std::uint32_t column_count) noexcept;
    void add_null() noexcept;
    void add_value(const void* data, std::size_t length) noexcept;
    Digest128 end_row() noexcept;
    // False when a row longer than the buffer could not get its streaming
    // state (out of memory): the digest of that row is not valid.
    bool ok() const noexcept { return !failed_; }

    // The whole v1 encoding of a row already laid out in memory (tests).
    static Digest128 hash_image(const void* data, std::size_t length) noexcept;

private:
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
