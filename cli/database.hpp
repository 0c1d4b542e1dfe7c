// A small RAII wrapper around a libpq connection for the command line tool.
#pragma once

#include <libpq-fe.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pg_idempotent::cli {

// A database error: the message as libpq gives it, and its SQLSTATE ("" for
// a connection that failed or broke).
struct DbError : std::runtime_error {
    explicit DbError(const std::string& message, std::string state = {})
        : std::runtime_error(message), sqlstate(std::move(state))
    {
    }
    std::string sqlstate;
};

using Cell = std::optional<std::string>;
using Rows = std::vector<std::vector<Cell>>;

class Database {
public:
    explicit Database(const std::string& conninfo);  // throws DbError
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    // Runs one statement with text parameters ($1...); throws DbError.
    Rows query(const std::string& sql, const std::vector<Cell>& params = {});

    // Sets, in this process's environment, the libpq variable (PGHOST,
    // PGPORT, PGDATABASE, PGUSER, PGSERVICE, ...) of every connection option
    // this connection used, so that a command started from here connects
    // where this connection did. Returns "NAME=value" for each (the
    // password's value shown as ***).
    std::vector<std::string> export_to_environment() const;

    // Waits at most timeout_ms for a notification (of the channels LISTENed
    // to, by idem.listen_effects) and takes every one that came; false on
    // timeout or a signal. DbError when the connection broke.
    bool wait_for_notification(int timeout_ms);

private:
    PGconn* conn_ = nullptr;
};

// A PostgreSQL text[] literal of the given strings.
std::string text_array(const std::vector<std::string>& items);

}  // namespace pg_idempotent::cli
