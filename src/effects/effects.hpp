// Side effects outside the database (docs/effects.md): a transactional
// outbox. An effect is recorded, keyed, in the caller's transaction
// (record.cpp); a dispatcher takes it with a lease and a fencing token and
// reports what the call did (delivery.cpp); its state is seen and managed
// by key, kind and age (manage.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pg/query_params.hpp"
#include "pg/spi.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

struct EffectRecord {
    std::string key;
    std::string kind;
    std::string payload;  // jsonb, as text
    std::string scope;
    pg::TypedValue not_before;  // timestamptz; NULL: now
    std::int32_t max_attempts = 10;
};

// true: recorded by this call; false: this key was recorded before with the
// same kind and payload. ID001 when it was recorded with another.
bool record_effect(const EffectRecord& effect);

// The rows of query (key text, payload jsonb[, not_before timestamptz]),
// recorded as record_effect records one: (effects recorded now, rows whose
// effect was there already: recorded before or by an earlier row).
void record_effects(const pg::ResultSet& out, const std::string& query, const std::string& kind,
                    const std::string& scope, std::int32_t max_attempts, const pg::QueryParams& params);

struct TakeRequest {
    std::string kind;
    std::int32_t n = 1;
    std::string lease;  // interval, as text
    std::string scope;
    std::optional<std::string> dispatcher;
};

// (key, payload, token, attempt, uncertain, lease_until) of each effect taken.
void take_effects(const pg::ResultSet& out, const TakeRequest& request);

// Rings the doorbell of (scope, kind) for this session and LISTENs on the
// kind's channel; returns (rung, settle_after): the transactions older than
// the xid settle_after may have recorded an effect without ringing, so the
// dispatcher looks again once none of them runs. rung is false when the
// doorbell could not be taken: poll.
void listen_effects(const pg::ResultSet& out, const std::string& kind, const std::string& scope);
// Stops both: a dispatcher with work needs no NOTIFY.
void unlisten_effects(const std::string& kind, const std::string& scope);

struct Report {
    std::string key;
    std::int64_t token = 0;
    std::string scope;
};

// The lease's new end; ID004 when the token no longer owns the effect.
std::string renew_effect(const Report& report, const std::string& lease);
void effect_done(const Report& report, const std::optional<std::string>& answer_json);
// The effects keys[i] taken with tokens[i] (text[], bigint[]), done with
// answers[i] (jsonb[], or NULL): in one statement, all or none (ID004 for
// the first whose token no longer owns it). Returns how many.
std::int64_t effects_done(const pg::TypedValue& keys, const pg::TypedValue& tokens, const pg::TypedValue& answers,
                          const std::string& scope);
// The effect's new state ('pending' or 'dead').
std::string effect_failed(const Report& report, const std::optional<std::string>& error, bool retry,
                          const std::optional<std::string>& retry_after, bool uncertain);

void effect_status(const pg::ResultSet& out, const std::string& key, const std::string& scope);
void effect_counts(const pg::ResultSet& out, const std::string& scope);
// (key, kind, payload) of every effect of the scope: what a rerun must leave
// as it was (pg_idempotent rerun --effects).
void effect_keys(const pg::ResultSet& out, const std::string& scope);
bool retry_effect(const std::string& key, const std::string& scope);
std::int64_t purge_effects(const std::string& older_than, const std::string& scope);

}  // namespace pg_idempotent
