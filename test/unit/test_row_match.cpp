// core/row_match.hpp: the comparison of two rows by stored image, as
// record_image_eq of two formed records (the SQL objects before 0.9.0) or
// pairwise by idem._images_equal, at most 50 pairs (100 arguments) a call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/row_match.hpp"

namespace {

using pg_idempotent::core::AssignmentTarget;
using pg_idempotent::core::images_equal;

AssignmentTarget col(const std::string& name, const std::string& type = "integer")
{
    return AssignmentTarget{name, type, "'" + name + "'"};
}

std::size_t count_of(const std::string& sql, const std::string& part)
{
    std::size_t n = 0;
    for (std::size_t at = sql.find(part); at != std::string::npos; at = sql.find(part, at + part.size()))
        ++n;
    return n;
}

TEST(ImagesEqual, RecordsWithoutTheFunction)
{
    EXPECT_EQ(images_equal({col("a", "pg_catalog.text"), col("b")}, "d", "t", false),
              "pg_catalog.record_image_eq(ROW(CAST(d.a AS pg_catalog.text), CAST(d.b AS integer)), ROW(t.a, t.b))");
    EXPECT_EQ(images_equal({}, "d", "t", false), "pg_catalog.record_image_eq(ROW(), ROW())");
}

// Each source value (cast to the target's type) beside the target's.
TEST(ImagesEqual, PairsWithTheFunction)
{
    EXPECT_EQ(images_equal({col("a", "pg_catalog.text"), col("b")}, "d", "t", true),
              "idem._images_equal(CAST(d.a AS pg_catalog.text), t.a, CAST(d.b AS integer), t.b)");
    EXPECT_EQ(images_equal({col("a")}, "EXCLUDED", "t", true, false), "idem._images_equal(EXCLUDED.a, t.a)");
    // No column to compare: the rows are the same (as ROW() *= ROW()).
    EXPECT_EQ(images_equal({}, "d", "t", true), "true");
}

// 100 arguments at most a call: 120 columns take three calls, all of them
// required, and no pair is left out or split.
TEST(ImagesEqual, WideRowsTakeOneCallPerFiftyColumns)
{
    std::vector<AssignmentTarget> cols;
    for (int i = 1; i <= 120; ++i)
        cols.push_back(col("c" + std::to_string(i)));
    const std::string sql = images_equal(cols, "EXCLUDED", "t", true, false);
    EXPECT_EQ(count_of(sql, "idem._images_equal("), 3u);
    EXPECT_EQ(count_of(sql, ") AND idem._images_equal("), 2u);
    EXPECT_EQ(sql.front(), '(');
    EXPECT_EQ(sql.back(), ')');
    for (int i = 1; i <= 120; ++i) {
        const std::string c = "c" + std::to_string(i);
        EXPECT_EQ(count_of(sql, "EXCLUDED." + c + ", t." + c + ")") + count_of(sql, "EXCLUDED." + c + ", t." + c + ","),
                  1u)
            << c;
    }
    EXPECT_NE(sql.find("EXCLUDED.c50, t.c50) AND idem._images_equal(EXCLUDED.c51, t.c51"), std::string::npos);
    EXPECT_NE(sql.find("EXCLUDED.c100, t.c100) AND idem._images_equal(EXCLUDED.c101, t.c101"), std::string::npos);
    // Exactly 50 columns: one call.
    cols.resize(50);
    EXPECT_EQ(count_of(images_equal(cols, "d", "t", true, false), "idem._images_equal("), 1u);
}

}  // namespace
