// The value idem.keys' primary key (scope, key) holds for a key: pure C++,
// no PostgreSQL header, so that claim's direct path, the SQL it runs
// (keys/key_rows.cpp, the same rule as an expression) and the unit test
// agree on it.
//
// Why not md5(key) for every key, as before 0.8.0: a hash scatters the
// inserts of consecutive keys over the whole index and makes every row
// carry a second copy of the key, which cost a claim a quarter of its
// throughput against a bare INSERT (bench/README.md, keys). The key itself
// is the natural index entry; only keys too long for a btree entry, and the
// rare key that starts with the digest's marker, are stored as a digest.
#pragma once

#include <cstddef>
#include <string>

namespace pg_idempotent::core {

// Keys of at most this many bytes are their own index entry.
inline constexpr std::size_t kInlineKeyBytes = 512;

// The marker a digest starts with (U+0001). A key stored inline never starts
// with it, so an inline key and a digest can never be equal.
inline constexpr char kDigestMarker = '\x01';

// Whether the key is stored inline (key = the key, long_key NULL) rather than
// as a digest (key = U+0001 || md5(key) in hex, long_key = the key).
bool key_is_inline(const std::string& key) noexcept;

// What idem.keys.key holds for this key.
std::string key_id(const std::string& key);

}  // namespace pg_idempotent::core
