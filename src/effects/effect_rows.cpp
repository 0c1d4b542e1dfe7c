#include "effects/effect_rows.hpp"

#include "common/scope_grants.hpp"
#include "pg/doorbell_lock.hpp"
#include "pg/errors.hpp"
#include "pg/notify.hpp"
#include "pg/roles.hpp"

namespace pg_idempotent::effects {

namespace {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

constexpr std::size_t kMostKeyBytes = 512;
constexpr std::size_t kMostKindBytes = 48;

}  // namespace

void require_key(const std::string& key)
{
    if (key.empty() || key.size() > kMostKeyBytes)
        throw UserError(sqlstate::kInvalidParameterValue,
                        key.empty() ? "key must not be empty" : "key is longer than 512 bytes",
                        "An effect's key is its idempotency key: the receiver deduplicates on it.",
                        "Use an id of the event or of what the effect does, such as 'charge:order-42'.");
}

void require_kind(const std::string& kind)
{
    if (kind.empty() || kind.size() > kMostKindBytes)
        throw UserError(sqlstate::kInvalidParameterValue,
                        kind.empty() ? "kind must not be empty" : "kind is longer than 48 bytes",
                        "The kind names the handler; dispatchers listen on the channel idem_effects.<kind>.",
                        "Name the handler briefly, such as 'send_receipt' or 'stripe.charge'.");
}

void require_scope(const std::string& scope)
{
    if (scope.empty())
        throw UserError(sqlstate::kInvalidParameterValue, "scope must not be empty", {},
                        "Leave scope out for 'default', or name the pipeline's scope.");
}

void on_effects(const std::string& scope, const std::function<void(pg::SpiSession&)>& body)
{
    require_scope(scope);
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kEffects, scope);
    pg::as_extension_owner([&] { body(spi); });
    spi.finish();
}

std::string channel_of(const std::string& kind)
{
    return "idem_effects." + kind;
}

std::string doorbell_of(const std::string& scope, const std::string& kind)
{
    return scope + "/" + kind;
}

void wake_dispatchers(const std::string& scope, const std::string& kind)
{
    if (pg::doorbell_held(doorbell_of(scope, kind)))
        pg::notify(channel_of(kind), "");
}

std::string shown(const std::string& key)
{
    return key.size() <= 200 ? key : key.substr(0, 200) + "...";
}

}  // namespace pg_idempotent::effects
