// The effects this backend has recorded (newly, not found there already),
// counted as they are: idem.assert_rerun_safe sees a job that records a new
// effect on a rerun as not rerun-safe (the outbox is part of what a rerun
// must leave as it was). No PostgreSQL state: a count and the last keys.
#pragma once

#include <cstdint>
#include <string>

namespace pg_idempotent {

// Called by the effects family for each effect it records.
void note_recorded_effect(const std::string& scope, const std::string& key);
// Called for a batch: how many, and one of their keys.
void note_recorded_effects(const std::string& scope, const std::string& one_key, std::uint64_t count);

struct RecordedEffects {
    std::uint64_t count = 0;  // since the backend started
    std::string last_scope;   // of the last one recorded
    std::string last_key;
};

RecordedEffects recorded_effects();

}  // namespace pg_idempotent
