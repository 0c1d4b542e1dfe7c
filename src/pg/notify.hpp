// NOTIFY from C++: what pg_notify(channel, payload) does, without a
// statement of its own (a recorder rings waiting dispatchers on its hot
// path).
#pragma once

#include <string>

namespace pg_idempotent::pg {

// Queues a notification on the channel, sent when the transaction commits
// (25006 during recovery, as NOTIFY).
void notify(const std::string& channel, const std::string& payload);

}  // namespace pg_idempotent::pg
