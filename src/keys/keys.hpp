// Idempotency keys (api.md section 3, first block): "I already did this" is a
// row in idem.keys, claimed in the caller's transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg/spi.hpp"

namespace pg_idempotent {

struct ClaimRequest {
    std::string key;
    std::string scope;
    std::optional<std::string> fingerprint;
    bool wait = true;
    std::optional<std::string> lease;  // interval, as text
};

bool claim(const ClaimRequest& request);
// A leased claim (request.lease set) that hands out the fencing token of the
// key's new owner; nullopt when the key is done.
std::optional<std::int64_t> claim_lease(const ClaimRequest& request);
void claim_many(const pg::ResultSet& out, const std::vector<std::string>& keys, const std::string& scope);
// With a token: ID004 unless that token still owns the key (src/keys/leases.cpp).
void complete(const std::string& key, const std::optional<std::string>& result_json, const std::string& scope,
              const std::optional<std::int64_t>& token = std::nullopt);
void save_point(const std::string& key, const std::string& recovery_point, const std::string& scope,
                const std::optional<std::int64_t>& token = std::nullopt);
// ID004 unless the token owns the key; locks its row until the transaction ends.
void check_lease(const std::string& key, const std::string& scope, std::int64_t token);
std::optional<std::string> result(const std::string& key, const std::string& scope);
std::optional<std::string> once(const std::string& key, const std::string& query, const std::string& scope,
                                const std::optional<std::string>& fingerprint);
void key_status(const pg::ResultSet& out, const std::string& key, const std::string& scope);
bool forget(const std::string& key, const std::string& scope);
std::int64_t purge_keys(const std::string& older_than, const std::optional<std::string>& scope);

}  // namespace pg_idempotent
