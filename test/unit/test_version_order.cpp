// core::VersionOrder: one version column compares with its own operators,
// several as rows (record_lt / record_eq), newest first in that order.
#include <gtest/gtest.h>

#include "core/version_order.hpp"

using pg_idempotent::core::AssignmentTarget;
using pg_idempotent::core::VersionOrder;

namespace {

AssignmentTarget col(const std::string& name, const std::string& literal)
{
    return AssignmentTarget{name, "pg_catalog.int8", literal};
}

VersionOrder one()
{
    VersionOrder v;
    v.columns = {col("ver", "'ver'")};
    v.lt = "OPERATOR(pg_catalog.<)";
    v.eq = "OPERATOR(pg_catalog.=)";
    return v;
}

VersionOrder two()
{
    VersionOrder v = one();
    v.columns.push_back(col("\"_loaded at\"", "'_loaded at'"));
    return v;
}

}  // namespace

TEST(VersionOrder, OneColumnUsesItsOperators)
{
    const VersionOrder v = one();
    EXPECT_TRUE(v.single());
    EXPECT_EQ(v.value("d"), "d.ver");
    EXPECT_EQ(v.less(v.value("d"), v.value("t")), "d.ver OPERATOR(pg_catalog.<) t.ver");
    EXPECT_EQ(v.equal(v.value("d"), "tops.top"), "d.ver OPERATOR(pg_catalog.=) tops.top");
    EXPECT_EQ(v.descending(""), "ver DESC");
    EXPECT_EQ(v.any_null("s"), "s.ver IS NULL");
    EXPECT_EQ(v.names_literal("pg_catalog.quote_ident"), "pg_catalog.quote_ident('ver')");
}

TEST(VersionOrder, SeveralColumnsCompareAsRowsInOrder)
{
    const VersionOrder v = two();
    EXPECT_FALSE(v.single());
    EXPECT_EQ(v.value("d"), "ROW(d.ver, d.\"_loaded at\")");
    EXPECT_EQ(v.less(v.value("d"), v.value("t")),
              "pg_catalog.record_lt(ROW(d.ver, d.\"_loaded at\"), ROW(t.ver, t.\"_loaded at\"))");
    EXPECT_EQ(v.equal("a", "b"), "pg_catalog.record_eq(a, b)");
    EXPECT_EQ(v.descending("j"), "j.ver DESC, j.\"_loaded at\" DESC");
    EXPECT_EQ(v.any_null(""), "(ver IS NULL OR \"_loaded at\" IS NULL)");
    EXPECT_EQ(v.names_literal(), "pg_catalog.concat_ws(', ', 'ver', '_loaded at')");
    EXPECT_TRUE(v.has("\"_loaded at\""));
    EXPECT_FALSE(v.has("_loaded at"));
}

TEST(VersionOrder, EmptyIsNoVersion)
{
    const VersionOrder v;
    EXPECT_TRUE(v.empty());
    EXPECT_FALSE(v.has("ver"));
}
