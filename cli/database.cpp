#include "database.hpp"

#include <cstdlib>
#include <cstring>

#include <poll.h>

namespace pg_idempotent::cli {

Database::Database(const std::string& conninfo)
{
    // As psql -d: a database name, a key=value string or a URI; empty means
    // the PG* environment alone.
    const char* keywords[] = {"dbname", "fallback_application_name", nullptr};
    const char* values[] = {conninfo.empty() ? nullptr : conninfo.c_str(), "pg_idempotent", nullptr};
    conn_ = PQconnectdbParams(keywords, values, 1);
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
        const std::string message = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
        throw DbError("could not connect: " + message);
    }
}

Database::~Database()
{
    if (conn_ != nullptr)
        PQfinish(conn_);
}

Rows Database::query(const std::string& sql, const std::vector<Cell>& params)
{
    std::vector<const char*> values;
    for (const auto& p : params)
        values.push_back(p ? p->c_str() : nullptr);
    PGresult* res = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                 values.empty() ? nullptr : values.data(), nullptr, nullptr, 0);
    const ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        std::string message = PQresultErrorMessage(res);
        const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        std::string sqlstate = state != nullptr ? state : "";
        PQclear(res);
        while (!message.empty() && message.back() == '\n')
            message.pop_back();
        throw DbError(message, sqlstate);
    }
    Rows rows;
    for (int r = 0; r < PQntuples(res); ++r) {
        std::vector<Cell> row;
        for (int c = 0; c < PQnfields(res); ++c)
            row.push_back(PQgetisnull(res, r, c) ? Cell() : Cell(PQgetvalue(res, r, c)));
        rows.push_back(std::move(row));
    }
    PQclear(res);
    return rows;
}

std::vector<std::string> Database::export_to_environment() const
{
    std::vector<std::string> exported;
    PQconninfoOption* options = PQconninfo(conn_);
    if (options == nullptr)
        throw DbError("out of memory reading the connection's options");
    for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
        // fallback_application_name and the like have no variable; an option
        // without a value is the default libpq takes anyway.
        if (o->envvar == nullptr || o->val == nullptr || o->val[0] == '\0')
            continue;
        setenv(o->envvar, o->val, 1);
        exported.push_back(std::string(o->envvar) + "=" +
                           (std::strcmp(o->keyword, "password") == 0 ? std::string("***") : std::string(o->val)));
    }
    PQconninfoFree(options);
    return exported;
}

bool Database::wait_for_notification(int timeout_ms)
{
    bool got = false;
    for (int round = 0; round < 2; ++round) {
        if (PQconsumeInput(conn_) == 0)
            throw DbError(std::string("the connection broke: ") + PQerrorMessage(conn_));
        while (PGnotify* n = PQnotifies(conn_)) {
            got = true;
            PQfreemem(n);
        }
        if (got || round == 1)
            return got;
        pollfd fd{PQsocket(conn_), POLLIN, 0};
        if (poll(&fd, 1, timeout_ms) <= 0)
            return false;  // timeout, or a signal (EINTR)
    }
    return got;
}

std::string text_array(const std::vector<std::string>& items)
{
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
            out += ',';
        out += '"';
        for (char ch : items[i]) {
            if (ch == '"' || ch == '\\')
                out += '\\';
            out += ch;
        }
        out += '"';
    }
    return out + "}";
}

}  // namespace pg_idempotent::cli
