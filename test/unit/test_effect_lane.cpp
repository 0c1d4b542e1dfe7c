// core::effect_lane: stored in idem.effects.lane, so its values are pinned
// here (computed apart, by the FNV-1a definition): a change would leave
// every stored effect in a lane no take reads.
#include <gtest/gtest.h>

#include "core/effect_lane.hpp"

namespace {

using pg_idempotent::core::effect_lane;

TEST(EffectLane, ValuesArePinned)
{
    EXPECT_EQ(effect_lane("default", "mail"), 1704234393);
    EXPECT_EQ(effect_lane("billing", "stripe.charge"), -272540315);
    EXPECT_EQ(effect_lane("", ""), 84696351);
    EXPECT_EQ(effect_lane("default", "path"), -403697175);  // sql/effects.sql reads it back
}

TEST(EffectLane, ScopeAndKindAreKeptApart)
{
    EXPECT_EQ(effect_lane("default", "mai"), -322281521);
    EXPECT_EQ(effect_lane("defaultm", "ail"), -448925093);
    EXPECT_NE(effect_lane("default", "mail"), effect_lane("defaultm", "ail"));
}

}  // namespace
