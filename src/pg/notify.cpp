#include "pg/notify.hpp"

#include "pg/guard.hpp"

extern "C" {
#include "commands/async.h"
#include "miscadmin.h"
}

namespace pg_idempotent::pg {

void notify(const std::string& channel, const std::string& payload)
{
    pg_call([&]() noexcept {
        PreventCommandDuringRecovery("NOTIFY");
        Async_Notify(channel.c_str(), payload.c_str());
    });
}

}  // namespace pg_idempotent::pg
