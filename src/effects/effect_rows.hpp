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

// The LISTEN channel of a kind: "idem_effects.<kind>".
std::string channel_of(const std::string& kind);

// The doorbell of (scope, kind) (pg/doorbell_lock.hpp), which idle
// dispatchers hold (idem.listen_effects). A NOTIFY makes every notifying
// commit of the cluster wait for the others (PostgreSQL serializes them),
// so an effect made deliverable rings only when a dispatcher waits: the
// recorder probes the doorbell after writing the effect and, when one
// holds it, notifies the kind's channel at commit (an empty payload: one
// notification per kind and transaction). A dispatcher that starts waiting
// after the probe waits for the recorder's transaction to end, then looks.
std::string doorbell_of(const std::string& scope, const std::string& kind);
// Probes, and notifies when a dispatcher waits. Call it after writing the
// effect, in the same transaction.
void wake_dispatchers(const std::string& scope, const std::string& kind);

// The key as an error message shows it (at most 200 characters).
std::string shown(const std::string& key);

}  // namespace pg_idempotent::effects
