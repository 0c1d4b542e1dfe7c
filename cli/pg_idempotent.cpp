// pg_idempotent: the command line that proves a job is safe to run twice.
// It runs an external job (psql -f, a Python script, dbt ...) N times, each
// in its own process and transactions, and compares the tables' checksums
// through the extension after each run. See `pg_idempotent --help`.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "core/row_text.hpp"
#include "database.hpp"
#include "dispatch.hpp"
#include "options.hpp"

namespace cli = pg_idempotent::cli;

namespace {

constexpr int kExitSafe = 0;
constexpr int kExitDiffers = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnchanged = 3;
// The state of a watched table that does not exist (yet).
constexpr const char* kAbsent = "absent";
constexpr std::size_t kSampleRows = 5;

std::string json_string(const std::string& s)
{
    std::string out = "\"";
    for (unsigned char ch : s) {
        switch (ch) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (ch < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                out += buf;
            } else {
                out += static_cast<char>(ch);
            }
        }
    }
    return out + "\"";
}

// A SQL string literal (for an identifier of ours in a query we build).
std::string sql_literal(const std::string& s)
{
    std::string out = "'";
    for (char ch : s)
        out += ch == '\'' ? std::string("''") : std::string(1, ch);
    return out + "'";
}

struct Table {
    std::string name;  // as regclass prints it
    std::string oid;
    std::string exclude;  // text[] of the excluded columns this table has
    std::string select;   // SELECT <kept columns> FROM <table>, quoted by the server
};

// Resolves a table and the columns it keeps; nullopt when no relation of
// that name exists (yet).
std::optional<Table> find_table(cli::Database& db, const std::string& t, const std::vector<std::string>& exclude)
{
    cli::Rows r;
    try {
        if (db.query("SELECT pg_catalog.to_regclass($1) IS NULL", {t}).at(0).at(0) == cli::Cell("t"))
            return std::nullopt;
        r = db.query(
            "SELECT c.oid::text, c.oid::regclass::text,"
            " COALESCE(array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attname = ANY ($2::text[])), '{}')::text,"
            " 'SELECT ' || COALESCE(string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)"
            "   FILTER (WHERE NOT a.attname = ANY ($2::text[])), '') || ' FROM ' || c.oid::regclass::text"
            " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid"
            " WHERE c.oid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped GROUP BY c.oid",
            {t, cli::text_array(exclude)});
    } catch (const cli::DbError& e) {
        std::string m = e.what();
        m = m.substr(0, m.find('\n'));
        throw cli::DbError("table \"" + t + "\": " + m);
    }
    if (r.empty())
        throw cli::DbError("table \"" + t + "\" has no columns");
    return Table{r[0][1].value_or(t), r[0][0].value_or(""), r[0][2].value_or("{}"), r[0][3].value_or("")};
}

// Every --exclude-column must name a column of one of the tables.
void check_excluded_columns(cli::Database& db, const std::vector<Table>& tables, const cli::Options& o)
{
    for (const auto& c : o.exclude_columns) {
        bool used = false;
        for (const auto& table : tables)
            used = used || db.query(
                                 "SELECT EXISTS (SELECT FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::oid"
                                 " AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped)",
                                 {table.oid, c})
                                   .at(0)
                                   .at(0) == cli::Cell("t");
        if (!used)
            throw cli::DbError("--exclude-column " + c + ": none of the tables has that column");
    }
}

// Resolves each table; a missing one is an error (exit 2).
std::vector<Table> resolve(cli::Database& db, const cli::Options& o)
{
    std::vector<Table> out;
    for (const auto& t : o.tables) {
        auto table = find_table(db, t, o.exclude_columns);
        if (!table)
            throw cli::DbError("table \"" + t + "\": relation \"" + t + "\" does not exist");
        out.push_back(*table);
    }
    check_excluded_columns(db, out, o);
    return out;
}

std::string checksum(cli::Database& db, const Table& t)
{
    // By name, not OID: a job may drop and re-create its table between runs.
    auto r = db.query("SELECT idem.checksum($1::regclass, $2::text[])", {t.name, t.exclude});
    return r.at(0).at(0).value_or("");
}

// digest -> (copies, one row as JSON): what a table holds, row by row.
std::map<std::string, std::pair<long long, std::string>> rows_of(cli::Database& db, const Table& t)
{
    std::map<std::string, std::pair<long long, std::string>> out;
    auto r = db.query("SELECT idem._row_digest(s)::text, count(*)::text, min(" +
                      pg_idempotent::core::row_text_in_column_order("s") + ") FROM (" + t.select + ") s GROUP BY 1");
    for (const auto& row : r)
        out[row[0].value_or("")] = {std::stoll(row[1].value_or("0")), row[2].value_or("")};
    return out;
}

// Runs the job once; returns its exit status (or 128 + signal).
int run_job(const std::vector<std::string>& job)
{
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        std::vector<char*> argv;
        for (const auto& a : job)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        std::perror(("pg_idempotent: cannot run " + job[0]).c_str());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

struct Result {
    int run;
    std::string table;
    std::string checksum;
};

int do_checksum(const cli::Options& o)
{
    cli::Database db(o.conninfo);
    auto tables = resolve(db, o);
    std::vector<Result> results;
    for (std::size_t i = 0; i < tables.size(); ++i) {
        std::cerr << "checksumming " << tables[i].name << " (" << i + 1 << "/" << tables.size() << ")..." << std::endl;
        results.push_back({0, tables[i].name, checksum(db, tables[i])});
    }
    if (o.json) {
        std::cout << "{\"checksums\": [";
        for (std::size_t i = 0; i < results.size(); ++i)
            std::cout << (i ? ", " : "") << "{\"table\": " << json_string(results[i].table)
                      << ", \"checksum\": " << json_string(results[i].checksum) << "}";
        std::cout << "]}" << std::endl;
    } else {
        for (const auto& r : results)
            std::cout << r.table << "\t" << r.checksum << "\n";
    }
    return kExitSafe;
}

// A table rerun watches: resolved once it exists (a job may create it).
// An outbox (--effects SCOPE) is watched as the rows of idem.effect_keys.
struct Watched {
    std::string name;  // as given with -t, or "effects in scope <SCOPE>"
    std::optional<Table> table;
    std::optional<std::string> effect_scope;
    std::string shown() const { return table ? table->name : name; }
};

Watched effects_watch(const std::string& scope)
{
    const std::string select = "SELECT key, kind, payload FROM idem.effect_keys(" + sql_literal(scope) + ")";
    return Watched{"effects in scope " + scope, Table{"effects in scope " + scope, "", "{}", select}, scope};
}

// What the table holds now: its checksum, or "absent".
std::string state_of(cli::Database& db, Watched& w, const cli::Options& o)
{
    if (w.effect_scope)
        return db.query("SELECT idem.checksum_query($1)", {w.table->select}).at(0).at(0).value_or("");
    if (db.query("SELECT pg_catalog.to_regclass($1) IS NULL", {w.name}).at(0).at(0) == cli::Cell("t"))
        return kAbsent;
    if (!w.table)
        w.table = find_table(db, w.name, o.exclude_columns);
    return checksum(db, *w.table);
}

using RowMap = std::map<std::string, std::pair<long long, std::string>>;

// A sample of the rows that one state has more of than the other.
void sample_difference(const RowMap& from, const RowMap& to, std::vector<std::string>& out)
{
    for (const auto& [digest, entry] : to) {
        auto it = from.find(digest);
        const long long before = it == from.end() ? 0 : it->second.first;
        for (long long k = before; k < entry.first && out.size() < kSampleRows; ++k)
            out.push_back(entry.second);
    }
}

struct Rerun {
    std::vector<std::string> before;  // each table's state before run 1
    std::vector<Result> results;      // after each run
    bool unchanged = false;           // run 1 changed none of the tables
    int changed_run = 0;
    std::string changed_table;
    std::string change;  // "created", "dropped" or empty (rows differ)
    std::vector<std::string> added, removed;
};

// Runs the job o.runs times (or until a run changes a table, or run 1
// changes none); throws DbError, returns false when the job failed.
bool run_all(cli::Database& db, const cli::Options& o, std::vector<Watched>& watched, Rerun& r)
{
    for (auto& w : watched)
        r.before.push_back(state_of(db, w, o));
    std::vector<std::string> first;
    std::vector<RowMap> first_rows;
    for (int run = 1; run <= o.runs && r.changed_run == 0; ++run) {
        std::cerr << "run " << run << "/" << o.runs << ":";
        for (const auto& a : o.job)
            std::cerr << " " << a;
        std::cerr << std::endl;
        const int status = run_job(o.job);
        if (status != 0) {
            std::cerr << "pg_idempotent: run " << run << ": the command failed with exit status " << status
                      << std::endl;
            return false;
        }
        for (std::size_t i = 0; i < watched.size(); ++i) {
            const auto started = std::chrono::steady_clock::now();
            std::cerr << "run " << run << ": checksumming " << watched[i].shown() << "..." << std::flush;
            const std::string c = state_of(db, watched[i], o);
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            std::cerr << " " << secs << " s" << std::endl;
            r.results.push_back({run, watched[i].shown(), c});
            if (run == 1) {
                first.push_back(c);
                first_rows.push_back(c == kAbsent ? RowMap() : rows_of(db, *watched[i].table));
                continue;
            }
            if (c == first[i] || r.changed_run != 0)
                continue;
            r.changed_run = run;
            r.changed_table = watched[i].shown();
            if (c == kAbsent || first[i] == kAbsent) {
                r.change = c == kAbsent ? "dropped" : "created";
                continue;
            }
            const RowMap now = rows_of(db, *watched[i].table);
            sample_difference(first_rows[i], now, r.added);
            sample_difference(now, first_rows[i], r.removed);
        }
        if (run == 1) {
            std::vector<Table> present;
            for (const auto& w : watched)
                if (w.table && !w.effect_scope)
                    present.push_back(*w.table);
            check_excluded_columns(db, present, o);
            if (first == r.before && !o.allow_unchanged) {
                r.unchanged = true;
                break;
            }
        }
    }
    return true;
}

void print_json(const cli::Options& o, const Rerun& r)
{
    const int runs_done = r.results.empty() ? 0 : r.results.back().run;
    auto checksums = [](const std::vector<Result>& results) {
        std::string out = "[";
        for (std::size_t i = 0; i < results.size(); ++i)
            out += std::string(i ? ", " : "") + "{\"run\": " + std::to_string(results[i].run) +
                   ", \"table\": " + json_string(results[i].table) +
                   ", \"checksum\": " + json_string(results[i].checksum) + "}";
        return out + "]";
    };
    std::vector<Result> before;
    for (std::size_t i = 0; i < r.before.size(); ++i)
        before.push_back({0, r.results.at(i).table, r.before[i]});
    std::cout << "{\"rerun_safe\": "
              << (r.unchanged          ? "null"
                  : r.changed_run == 0 ? "true"
                                       : "false")
              << ", \"proven\": " << (r.unchanged ? "false" : "true") << ", \"runs\": " << o.runs
              << ", \"runs_done\": " << runs_done << ", \"before\": " << checksums(before)
              << ", \"checksums\": " << checksums(r.results);
    if (r.changed_run != 0) {
        std::cout << ", \"difference\": {\"run\": " << r.changed_run << ", \"table\": " << json_string(r.changed_table);
        if (!r.change.empty())
            std::cout << ", \"change\": " << json_string(r.change);
        std::cout << ", \"added\": [";
        for (std::size_t i = 0; i < r.added.size(); ++i)
            std::cout << (i ? ", " : "") << r.added[i];
        std::cout << "], \"removed\": [";
        for (std::size_t i = 0; i < r.removed.size(); ++i)
            std::cout << (i ? ", " : "") << r.removed[i];
        std::cout << "]}";
    }
    std::cout << "}" << std::endl;
}

void print_text(const Rerun& r)
{
    for (std::size_t i = 0; i < r.before.size(); ++i)
        std::cout << "before\t" << r.results.at(i).table << "\t" << r.before[i] << "\n";
    for (const auto& x : r.results)
        std::cout << "run " << x.run << "\t" << x.table << "\t" << x.checksum << "\n";
    if (r.unchanged) {
        std::cout << "nothing was proven: run 1 changed none of the watched tables (did the job write where "
                     "rerun looks? pass --allow-unchanged if it had no new input)\n";
    } else if (r.changed_run == 0) {
        std::cout << "rerun-safe: every run left every table as run 1 did\n";
    } else {
        std::cout << "NOT rerun-safe: run " << r.changed_run << " changed " << r.changed_table
                  << (r.change.empty() ? "" : " (" + r.change + " it)") << "\n";
        for (const auto& a : r.added)
            std::cout << "+ " << a << "\n";
        for (const auto& x : r.removed)
            std::cout << "- " << x << "\n";
    }
}

int do_rerun(const cli::Options& o)
{
    cli::Database db(o.conninfo);
    // COMMAND connects where rerun does (its PG* environment).
    std::cerr << "COMMAND's connection:";
    for (const auto& v : db.export_to_environment())
        std::cerr << " " << v;
    std::cerr << std::endl;
    std::vector<Watched> watched;
    for (const auto& t : o.tables)
        watched.push_back({t, std::nullopt, std::nullopt});
    for (const auto& scope : o.effect_scopes)
        watched.push_back(effects_watch(scope));
    Rerun r;
    if (!run_all(db, o, watched, r))
        return kExitUsage;
    if (o.json)
        print_json(o, r);
    else
        print_text(r);
    if (r.unchanged)
        return kExitUnchanged;
    return r.changed_run == 0 ? kExitSafe : kExitDiffers;
}

}  // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string error;
    auto options = cli::parse(args, error);
    if (!options) {
        std::cerr << "pg_idempotent: " << error << "\nTry \"pg_idempotent --help\"." << std::endl;
        return kExitUsage;
    }
    try {
        switch (options->command) {
        case cli::Options::Command::kHelp:
            std::cout << cli::kUsage;
            return kExitSafe;
        case cli::Options::Command::kChecksum:
            return do_checksum(*options);
        case cli::Options::Command::kRerun:
            return do_rerun(*options);
        case cli::Options::Command::kDispatch:
            return cli::dispatch({options->conninfo, options->kind, options->scope, options->workers,
                                  options->lease_seconds, options->poll_seconds, options->job});
        case cli::Options::Command::kNone:
            break;
        }
    } catch (const cli::DbError& e) {
        std::cerr << "pg_idempotent: " << e.what() << std::endl;
        return kExitUsage;
    } catch (const std::exception& e) {
        std::cerr << "pg_idempotent: " << e.what() << std::endl;
        return kExitUsage;
    }
    return kExitUsage;
}
