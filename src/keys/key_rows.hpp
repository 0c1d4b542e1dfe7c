// What the key functions share: how a key's row is found in idem.keys, how
// a key is shown in messages, and the frame every per-key function runs in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "pg/errors.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent::keys {

// Statements are fixed text run as the extension owner; values travel as $1
// (scope) and $2 (key), then the statement's own. A row is found by its
// primary key, (scope, key) with the key itself or, for a key too long for a
// btree entry, a digest (core/key_id.hpp); before 0.8.0 (a newer module
// before ALTER EXTENSION ... UPDATE), (scope, key_hash = md5(key)::uuid). A
// row found by a digest is this key's only if the key it holds is this one,
// byte for byte (the "C" collation): another key with the same MD5 is not.

// " WHERE ...": this key's row.
std::string where_key();
// " WHERE ...": the row that holds this key's primary key value, this key's
// or, after an MD5 collision, another key's.
std::string where_id();
// SQL: the primary key value of the key expression, and its column.
std::string id_sql(const std::string& key);
const char* id_column();
// SQL: the primary key value of row k as text (as id_of gives it), and the
// type of an array of them.
std::string id_text_sql();
const char* id_array_type();
// The primary key value of a key as text, as id_text_sql() shows it.
std::string id_of(const std::string& key);
// SQL: the key row k holds.
std::string full_key_sql();
// SQL for an INSERT of a key: its key columns and their values.
std::string key_columns_sql();
std::string key_values_sql(const std::string& key);

// Whether idem.keys has its token column (0.8.0; a newer module before ALTER
// EXTENSION ... UPDATE has none, and keys get no tokens).
bool tokens_installed();

// A key as messages show it: long keys are cut to 80 bytes, on a UTF-8
// character boundary.
std::string shown(const std::string& key);

// "idempotency key "<key>" in scope "<scope>"", the subject of messages.
std::string key_in_scope(const std::string& key, const std::string& scope);

// UserError 22023 when value is empty.
void require_text(const std::string& value, const char* what);
// 54000 unless value (a key, a fingerprint: at most kMaxKeyBytes; a result or
// recovery point: idem.max_result_size) fits: idem.keys is shared by every
// granted role, and nothing a real request sends comes near these.
inline constexpr std::size_t kMaxKeyBytes = 8192;
void require_key_size(const std::string& value, const char* what);
void require_result_size(const std::optional<std::string>& value, const char* what);

// The columns of a key's row that the functions decide on.
struct KeyRow {
    std::string state;
    std::optional<std::string> fingerprint;
    bool mine = false;        // claimed_by = this transaction
    bool lease_live = false;  // lease_until > clock_timestamp()
    std::optional<std::string> lease_until;
    std::optional<std::int64_t> token;
};

// The key's row as this statement sees it; with lock, locked FOR SHARE
// (a takeover, an UPDATE, then waits for this transaction to end).
std::optional<KeyRow> lookup(pg::SpiSession& spi, const std::string& scope, const std::string& key, bool lock = false);

// The frame of every per-key function: the arguments, the caller's grant,
// then body on idem.keys as the extension owner.
void on_key_state(const std::string& key, const std::string& scope, const std::function<void(pg::SpiSession&)>& body);

}  // namespace pg_idempotent::keys
