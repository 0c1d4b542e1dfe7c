// The command line of pg_idempotent, parsed into plain values (pure C++, no
// libpq: unit-tested in test/unit/test_cli_options.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pg_idempotent::cli {

struct Options {
    enum class Command { kNone, kHelp, kRerun, kChecksum, kDispatch };
    Command command = Command::kNone;
    std::string conninfo;                    // -d; empty = the PG* environment
    std::vector<std::string> tables;         // -t (rerun) or positional (checksum)
    std::vector<std::string> effect_scopes;  // --effects (rerun): outboxes a rerun must leave as they were
    int runs = 2;
    std::vector<std::string> exclude_columns;
    bool json = false;
    bool allow_unchanged = false;  // --allow-unchanged: run 1 may change nothing
    std::vector<std::string> job;  // after -- (rerun's job, dispatch's command)
    // dispatch
    std::string kind;
    std::string scope = "default";
    int workers = 1;
    int lease_seconds = 30;
    int poll_seconds = 5;
};

// Parses argv[1..]; on a usage error returns nullopt and sets error.
std::optional<Options> parse(const std::vector<std::string>& args, std::string& error);

extern const char* const kUsage;

}  // namespace pg_idempotent::cli
