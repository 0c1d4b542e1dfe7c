// SQL text helpers: callers pass already-quoted identifiers; these only glue.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/sql_text.hpp"

namespace {

using pg_idempotent::core::join;
using pg_idempotent::core::select_columns;

TEST(Join, Empty) { EXPECT_EQ(join({}), ""); }

TEST(Join, One) { EXPECT_EQ(join({"a"}), "a"); }

TEST(Join, ManyWithDefaultSeparator) { EXPECT_EQ(join({"a", "b", "c"}), "a, b, c"); }

TEST(Join, CustomSeparator)
{
    EXPECT_EQ(join({"a", "b", "c"}, " AND "), "a AND b AND c");
    EXPECT_EQ(join({"x", "y"}, ""), "xy");
}

TEST(Join, EmptyPartsKeepTheirSeparators)
{
    EXPECT_EQ(join({"", ""}), ", ");
    EXPECT_EQ(join({"a", "", "c"}), "a, , c");
}

TEST(Join, PartsArePassedThroughUnchanged)
{
    EXPECT_EQ(join({"\"Mixed Case\"", "\"a,b\""}), "\"Mixed Case\", \"a,b\"");
}

TEST(SelectColumns, Several)
{
    EXPECT_EQ(select_columns({"id", "\"Name\""}, "public.t"), "SELECT id, \"Name\" FROM public.t");
}

TEST(SelectColumns, One) { EXPECT_EQ(select_columns({"a"}, "s.x"), "SELECT a FROM s.x"); }

TEST(SelectColumns, ZeroColumns)
{
    // A zero-column table still has rows: PostgreSQL accepts "SELECT FROM x",
    // and the double space is what the code writes.
    EXPECT_EQ(select_columns({}, "x"), "SELECT  FROM x");
}

}  // namespace
