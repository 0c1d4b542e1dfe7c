#include "merge/first_load_tally.hpp"

#include <unordered_map>

namespace pg_idempotent {

namespace {

// Per target: a trigger of one merge's target may merge into another table
// within the statement. Backend-local, like the statement it counts.
std::unordered_map<std::uint32_t, FirstLoadConflicts>& tallies()
{
    static std::unordered_map<std::uint32_t, FirstLoadConflicts> by_target;
    return by_target;
}

}  // namespace

void reset_first_load_conflicts(std::uint32_t target)
{
    tallies().erase(target);
}

bool note_first_load_conflict(std::uint32_t target, bool same_content)
{
    FirstLoadConflicts& t = tallies()[target];
    if (same_content)
        ++t.unchanged;
    else
        ++t.updated;
    return !same_content;
}

FirstLoadConflicts first_load_conflicts(std::uint32_t target)
{
    const auto it = tallies().find(target);
    return it == tallies().end() ? FirstLoadConflicts{} : it->second;
}

}  // namespace pg_idempotent
