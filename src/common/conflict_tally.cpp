#include "common/conflict_tally.hpp"

#include <unordered_map>

namespace pg_idempotent {

namespace {

// Per target: a trigger on one statement's target may write into another
// through merge or append within the statement. Backend-local, like the
// statement it counts.
std::unordered_map<std::uint32_t, ConflictCounts>& tallies()
{
    static std::unordered_map<std::uint32_t, ConflictCounts> by_target;
    return by_target;
}

}  // namespace

void reset_conflicts(std::uint32_t target)
{
    tallies().erase(target);
}

bool note_conflict(std::uint32_t target, bool same_content, bool may_update)
{
    ConflictCounts& t = tallies()[target];
    if (same_content)
        ++t.same;
    else
        ++t.differ;
    return may_update && !same_content;
}

ConflictCounts conflicts(std::uint32_t target)
{
    const auto it = tallies().find(target);
    return it == tallies().end() ? ConflictCounts{} : it->second;
}

}  // namespace pg_idempotent
