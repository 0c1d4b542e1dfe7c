// core::key_id: what idem.keys' primary key holds for a key. The SQL side
// (keys/key_rows.cpp, id_sql) computes the same in SQL; sql/keys.sql checks
// the rows both paths write against this rule.
#include <gtest/gtest.h>

#include <string>

#include "core/key_id.hpp"

namespace {

using pg_idempotent::core::key_id;
using pg_idempotent::core::key_is_inline;

TEST(KeyId, OrdinaryKeysAreTheirOwnId)
{
    EXPECT_EQ(key_id("evt_1"), "evt_1");
    EXPECT_EQ(key_id("Käse ☕ 鍵"), "Käse ☕ 鍵");
    const std::string k512(512, 'a');
    EXPECT_TRUE(key_is_inline(k512));
    EXPECT_EQ(key_id(k512), k512);
}

TEST(KeyId, LongKeysAreStoredAsTheirDigest)
{
    const std::string k513(513, 'a');
    EXPECT_FALSE(key_is_inline(k513));
    EXPECT_EQ(key_id(k513), std::string("\x01") + "6649c3e827e44f7bf539768bddf76435");
}

TEST(KeyId, AKeyStartingWithTheMarkerIsStoredAsItsDigest)
{
    // Otherwise "\x01" + 32 hex digits, a valid key, could equal a long
    // key's digest.
    EXPECT_FALSE(key_is_inline("\x01x"));
    EXPECT_EQ(key_id("\x01x"), std::string("\x01") + "7cde855facee387b0efaaff17925ab49");
    EXPECT_TRUE(key_is_inline("x\x01"));
}

TEST(KeyId, InlineIdsAndDigestsNeverMeet)
{
    for (const std::string& k : {std::string(600, 'z'), std::string("\x01"), std::string("\x01\x01")}) {
        const std::string id = key_id(k);
        EXPECT_EQ(id.size(), 33u);
        EXPECT_EQ(id[0], '\x01');
        EXPECT_FALSE(key_is_inline(id)) << "a digest is never an inline key's id";
    }
}

}  // namespace
