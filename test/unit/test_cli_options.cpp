// The command line's argument parsing (cli/options.cpp).
#include <gtest/gtest.h>

#include "options.hpp"

using pg_idempotent::cli::Options;
using pg_idempotent::cli::parse;

namespace {
std::optional<Options> p(std::vector<std::string> args, std::string* err = nullptr)
{
    std::string e;
    auto o = parse(args, e);
    if (err != nullptr)
        *err = e;
    return o;
}
}  // namespace

TEST(CliOptions, RerunWithEverything)
{
    auto o = p({"rerun", "-d", "dbname=shop", "-t", "a", "--table", "s.b", "--runs", "3", "--exclude-column",
                "loaded_at", "--json", "--", "psql", "-f", "job.sql", "--json"});
    ASSERT_TRUE(o);
    EXPECT_EQ(o->command, Options::Command::kRerun);
    EXPECT_EQ(o->conninfo, "dbname=shop");
    EXPECT_EQ(o->tables, (std::vector<std::string>{"a", "s.b"}));
    EXPECT_EQ(o->runs, 3);
    EXPECT_EQ(o->exclude_columns, (std::vector<std::string>{"loaded_at"}));
    EXPECT_TRUE(o->json);
    // Everything after -- is the job's, options included.
    EXPECT_EQ(o->job, (std::vector<std::string>{"psql", "-f", "job.sql", "--json"}));
}

TEST(CliOptions, DefaultsToTwoRuns)
{
    auto o = p({"rerun", "-t", "a", "--", "true"});
    ASSERT_TRUE(o);
    EXPECT_EQ(o->runs, 2);
    EXPECT_TRUE(o->conninfo.empty());
    EXPECT_FALSE(o->json);
}

TEST(CliOptions, AllowUnchangedBelongsToRerun)
{
    auto o = p({"rerun", "-t", "a", "--", "true"});
    ASSERT_TRUE(o);
    EXPECT_FALSE(o->allow_unchanged);
    o = p({"rerun", "-t", "a", "--allow-unchanged", "--", "true", "--allow-unchanged"});
    ASSERT_TRUE(o);
    EXPECT_TRUE(o->allow_unchanged);
    EXPECT_EQ(o->job, (std::vector<std::string>{"true", "--allow-unchanged"}));
    std::string err;
    EXPECT_FALSE(p({"checksum", "--allow-unchanged", "t"}, &err));
    EXPECT_NE(err.find("unknown option \"--allow-unchanged\""), std::string::npos) << err;
}

TEST(CliOptions, ChecksumTakesTablesAsArguments)
{
    auto o = p({"checksum", "-d", "shop", "t1", "t2"});
    ASSERT_TRUE(o);
    EXPECT_EQ(o->command, Options::Command::kChecksum);
    EXPECT_EQ(o->tables, (std::vector<std::string>{"t1", "t2"}));
}

TEST(CliOptions, Help)
{
    EXPECT_EQ(p({"--help"})->command, Options::Command::kHelp);
    EXPECT_EQ(p({"-h"})->command, Options::Command::kHelp);
    EXPECT_EQ(p({"rerun", "--help"})->command, Options::Command::kHelp);
}

TEST(CliOptions, UsageErrors)
{
    std::string err;
    EXPECT_FALSE(p({}, &err));
    EXPECT_EQ(err, "no command given");
    EXPECT_FALSE(p({"frobnicate"}, &err));
    EXPECT_EQ(err, "unknown command \"frobnicate\"");
    EXPECT_FALSE(p({"rerun", "--", "true"}, &err));
    EXPECT_EQ(err, "rerun needs at least one -t TABLE (or --effects SCOPE)");
    EXPECT_FALSE(p({"rerun", "-t", "a"}, &err));
    EXPECT_EQ(err, "rerun needs the job's command after --");
    EXPECT_FALSE(p({"rerun", "-t", "a", "--runs", "1", "--", "true"}, &err));
    EXPECT_EQ(err, "--runs must be at least 2");
    EXPECT_FALSE(p({"rerun", "-t", "a", "--runs", "two", "--", "true"}, &err));
    EXPECT_EQ(err, "--runs needs a whole number, not \"two\"");
    EXPECT_FALSE(p({"rerun", "-t"}, &err));
    EXPECT_EQ(err, "option -t needs a value");
    EXPECT_FALSE(p({"rerun", "-t", "a", "--bogus", "--", "true"}, &err));
    EXPECT_EQ(err, "unknown option \"--bogus\"");
    EXPECT_FALSE(p({"rerun", "-t", "a", "stray", "--", "true"}, &err));
    EXPECT_EQ(err, "unexpected argument \"stray\" (put the job's command after --)");
    EXPECT_FALSE(p({"checksum"}, &err));
    EXPECT_EQ(err, "checksum needs at least one TABLE");
    EXPECT_FALSE(p({"checksum", "t", "--", "x"}, &err));
    EXPECT_EQ(err, "\"--\" and a command belong to rerun");
}

TEST(CliOptions, Dispatch)
{
    auto o = p({"dispatch", "-d", "dbname=shop", "--kind", "stripe.charge", "--scope", "billing", "--workers", "4",
                "--lease", "60", "--poll", "2", "--", "./charge.sh", "--live"});
    ASSERT_TRUE(o);
    EXPECT_EQ(o->command, Options::Command::kDispatch);
    EXPECT_EQ(o->conninfo, "dbname=shop");
    EXPECT_EQ(o->kind, "stripe.charge");
    EXPECT_EQ(o->scope, "billing");
    EXPECT_EQ(o->workers, 4);
    EXPECT_EQ(o->lease_seconds, 60);
    EXPECT_EQ(o->poll_seconds, 2);
    EXPECT_EQ(o->job, (std::vector<std::string>{"./charge.sh", "--live"}));
    auto d = p({"dispatch", "--kind", "mail", "--", "true"});
    ASSERT_TRUE(d);
    EXPECT_EQ(d->scope, "default");
    EXPECT_EQ(d->workers, 1);
    EXPECT_EQ(d->lease_seconds, 30);
    EXPECT_EQ(d->poll_seconds, 5);
    EXPECT_EQ(p({"dispatch", "--help"})->command, Options::Command::kHelp);
}

TEST(CliOptions, DispatchUsageErrors)
{
    std::string err;
    EXPECT_FALSE(p({"dispatch", "--", "true"}, &err));
    EXPECT_EQ(err, "dispatch needs --kind KIND");
    EXPECT_FALSE(p({"dispatch", "--kind", "mail"}, &err));
    EXPECT_EQ(err, "dispatch needs the command to run after --");
    EXPECT_FALSE(p({"dispatch", "--kind", "mail", "--workers", "0", "--", "true"}, &err));
    EXPECT_EQ(err, "--workers needs a whole number of at least 1, not \"0\"");
    EXPECT_FALSE(p({"dispatch", "--kind", "mail", "--lease", "2", "--", "true"}, &err));
    EXPECT_EQ(err, "--lease needs a whole number of at least 3, not \"2\"");
    EXPECT_FALSE(p({"dispatch", "--kind", "mail", "-t", "x", "--", "true"}, &err));
    EXPECT_EQ(err, "unknown option \"-t\" for dispatch");
    EXPECT_FALSE(p({"dispatch", "--kind"}, &err));
    EXPECT_EQ(err, "option --kind needs a value");
}
