// core::PartitionPrune: the conditions a statement kept to its batch's
// partitions adds to the target, the check each batch row passes, and the
// two reads of the batch that come before the statement.
#include <gtest/gtest.h>

#include "core/partition_prune.hpp"

using pg_idempotent::core::AssignmentTarget;
using pg_idempotent::core::PartitionPrune;

namespace {

PartitionPrune values_prune()
{
    return PartitionPrune{AssignmentTarget{"\"Day\"", "pg_catalog.date", "'Day'"}, "OPERATOR(pg_catalog.=)", false, 3,
                          "ID901"};
}

PartitionPrune window_prune()
{
    PartitionPrune p = values_prune();
    p.window = true;
    p.first = 5;
    return p;
}

}  // namespace

TEST(PartitionPrune, ValuesConditionIsAnArrayMembership)
{
    EXPECT_EQ(prune_condition(values_prune(), "t"), " AND t.\"Day\" OPERATOR(pg_catalog.=) ANY ($3)");
}

TEST(PartitionPrune, WindowConditionIsTheWidenedRange)
{
    EXPECT_EQ(prune_condition(window_prune(), "e"),
              " AND e.\"Day\" OPERATOR(pg_catalog.>=) $5 AND e.\"Day\" OPERATOR(pg_catalog.<=) $6");
}

TEST(PartitionPrune, RowCheckCastsLetsNullsPassAndRaisesOutside)
{
    const std::string check = prune_row_check(values_prune(), "s");
    EXPECT_EQ(check.rfind("(CAST(s.\"Day\" AS pg_catalog.date) IS NULL OR CAST(s.\"Day\" AS pg_catalog.date) "
                          "OPERATOR(pg_catalog.=) ANY ($3) OR idem._raise('ID901', ",
                          0),
              0u);
    EXPECT_NE(check.find("'The statement runs again over every partition.')"), std::string::npos);
}

TEST(PartitionPrune, WindowRowCheckUsesTheBatchsOwnRange)
{
    const std::string check = prune_row_check(window_prune(), "s");
    EXPECT_NE(check.find(">=) $7 AND CAST(s.\"Day\" AS pg_catalog.date) OPERATOR(pg_catalog.<=) $8 OR"),
              std::string::npos);
}

TEST(PartitionPrune, ValuesSqlIsDistinctAndCapped)
{
    EXPECT_EQ(partition_values_sql("SELECT * FROM x WHERE d = $1", values_prune().column, 1000),
              "SELECT idem._canonical_text(pg_catalog.array_agg(d.v)) FROM (SELECT DISTINCT b.v FROM (SELECT "
              "CAST(s.\"Day\" AS pg_catalog.date) AS v FROM (SELECT * FROM x WHERE d = $1\n) AS s) AS b) AS d "
              "HAVING pg_catalog.count(*) OPERATOR(pg_catalog.<=) 1000");
}

TEST(PartitionPrune, WindowSqlWidensByWithinAndKeepsTheRange)
{
    const std::string sql = partition_window_sql("TABLE x", values_prune().column, "$2");
    EXPECT_NE(sql.find("CAST(pg_catalog.min(b.v) OPERATOR(pg_catalog.-) $2::pg_catalog.interval AS pg_catalog.date)"),
              std::string::npos);
    EXPECT_NE(sql.find("CAST(pg_catalog.max(b.v) OPERATOR(pg_catalog.+) $2::pg_catalog.interval AS pg_catalog.date)"),
              std::string::npos);
    EXPECT_NE(sql.find("idem._canonical_text(pg_catalog.min(b.v)), idem._canonical_text(pg_catalog.max(b.v))"),
              std::string::npos);
}
