// MD5 (RFC 1321): pure C++, no PostgreSQL header.
//
// Kept, though PostgreSQL exports an MD5 (pg_md5_binary), because the pure
// core must compute it without a server: core::key_id names a long key by
// it (unit-tested without PostgreSQL), as idem.keys did by md5(key)::uuid
// before 0.8.0. PostgreSQL's goes through OpenSSL's EVP interface (a context
// allocated and a digest fetched per call, several microseconds for a short
// key, a visible share of one claim); this is the same digest, in place.
#pragma once

#include <cstddef>

namespace pg_idempotent::core {

// The 16-byte MD5 digest of data (the bytes of md5(text)'s hex result, and
// so of md5(text)::uuid).
void md5(const void* data, std::size_t size, unsigned char out[16]) noexcept;

}  // namespace pg_idempotent::core
