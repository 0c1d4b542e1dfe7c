// pg_idempotent dispatch: a dispatcher of the outbox that needs no code
// (docs/effects.md). Workers take effects of one kind, run a command once
// per attempt with the payload on its stdin, renew the lease while it runs,
// and report its outcome with the fencing token.
#pragma once

#include <string>
#include <vector>

namespace pg_idempotent::cli {

struct DispatchOptions {
    std::string conninfo;
    std::string kind;
    std::string scope = "default";
    int workers = 1;
    int lease_seconds = 30;
    int poll_seconds = 5;
    std::vector<std::string> command;
};

// Runs until SIGTERM or SIGINT (the running attempts finish and are
// reported first). Returns the exit status: 0, or 2 when a worker could not
// work at all (no such extension, no grant for the scope).
int dispatch(const DispatchOptions& options);

}  // namespace pg_idempotent::cli
