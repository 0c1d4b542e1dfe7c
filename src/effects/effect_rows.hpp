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

// The doorbell of (scope, kind): a session-level advisory lock that idle
// dispatchers hold shared (idem.listen_effects). A NOTIFY makes every
// notifying commit of the cluster wait for the others (PostgreSQL
// serializes them), so an effect made deliverable rings only when a
// dispatcher waits: the recorder probes the lock after writing the effect
// and, when one holds it, notifies the kind's channel at commit (an empty
// payload: one notification per kind and transaction). A dispatcher that
// starts waiting after the probe waits for the recorder's transaction to
// end, then looks.
//
// The advisory lock's two keys for the scope and kind given as SQL
// (parameters such as "$1").
std::string doorbell_keys(const std::string& scope_sql, const std::string& kind_sql);
// A boolean SQL expression: whether a dispatcher of that scope and kind
// waits. The probe holds the lock exclusively for one expression: a
// recorder probing at the same moment rings without need (a spare NOTIFY).
std::string dispatcher_waits_sql(const std::string& scope_sql, const std::string& kind_sql);
// Probes, and notifies when a dispatcher waits.
void wake_dispatchers(pg::SpiSession& spi, const std::string& scope, const std::string& kind);
void notify_dispatchers(pg::SpiSession& spi, const std::string& kind);

// The key as an error message shows it (at most 200 characters).
std::string shown(const std::string& key);

}  // namespace pg_idempotent::effects
