// MD5 (RFC 1321): pure C++, no PostgreSQL header.
//
// idem.keys finds a key by md5(key)::uuid. SQL computes it with PostgreSQL's
// md5(), which goes through OpenSSL's EVP interface: a context allocated and
// a digest fetched per call, several microseconds for a short key, a visible
// share of one claim. This is the same digest, computed in place.
#pragma once

#include <cstddef>

namespace pg_idempotent::core {

// The 16-byte MD5 digest of data (the bytes of md5(text)'s hex result, and
// so of md5(text)::uuid).
void md5(const void* data, std::size_t size, unsigned char out[16]) noexcept;

}  // namespace pg_idempotent::core
