#include "common/effect_log.hpp"

namespace pg_idempotent {

namespace {

RecordedEffects g_recorded;

}  // namespace

void note_recorded_effect(const std::string& scope, const std::string& key)
{
    note_recorded_effects(scope, key, 1);
}

void note_recorded_effects(const std::string& scope, const std::string& one_key, std::uint64_t count)
{
    if (count == 0)
        return;
    g_recorded.count += count;
    g_recorded.last_scope = scope;
    g_recorded.last_key = one_key;
}

RecordedEffects recorded_effects()
{
    return g_recorded;
}

}  // namespace pg_idempotent
