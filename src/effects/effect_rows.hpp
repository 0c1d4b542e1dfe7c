// What every function of the effects family shares: the checks of its
// arguments, the scope grant, the channel dispatchers listen on.
#pragma once

#include <functional>
#include <string>

#include "pg/spi.hpp"

namespace pg_idempotent::effects {

// 22023 for an empty key or one over 512 bytes (the primary key's), an
// empty kind or one over 48 bytes (its channel name must fit in 63), an
// empty scope.
void require_key(const std::string& key);
void require_kind(const std::string& kind);
void require_scope(const std::string& scope);

// The caller's grant for the scope (kind 'effects', 42501 otherwise), then
// body as the extension owner, which alone reads and writes idem.effects.
void on_effects(const std::string& scope, const std::function<void(pg::SpiSession&)>& body);

// The LISTEN channel of a kind: "idem_effects.<kind>". A NOTIFY on it is
// sent when the transaction that made an effect deliverable commits.
std::string channel_of(const std::string& kind);
// SQL that notifies the channel of kind $n (an empty payload: one
// notification per kind and transaction, however many effects).
std::string notify_sql(const std::string& kind_param);

// The key as an error message shows it (at most 200 characters).
std::string shown(const std::string& key);

}  // namespace pg_idempotent::effects
