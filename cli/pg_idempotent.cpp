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
#include <sstream>

#include "database.hpp"
#include "options.hpp"

namespace cli = pg_idempotent::cli;

namespace {

constexpr int kExitSafe = 0;
constexpr int kExitDiffers = 1;
constexpr int kExitUsage = 2;
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

struct Table {
    std::string name;  // as regclass prints it
    std::string oid;
    std::string exclude;  // text[] of the excluded columns this table has
    std::string select;   // SELECT <kept columns> FROM <table>, quoted by the server
};

// Resolves each table and the columns it keeps; a missing table is exit 2.
std::vector<Table> resolve(cli::Database& db, const cli::Options& o)
{
    std::vector<Table> out;
    std::map<std::string, bool> used;
    for (const auto& t : o.tables) {
        cli::Rows r;
        try {
            r = db.query(
                "SELECT c.oid::text, c.oid::regclass::text,"
                " COALESCE(array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attname = ANY ($2::text[])), '{}')::text,"
                " 'SELECT ' || COALESCE(string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)"
                "   FILTER (WHERE NOT a.attname = ANY ($2::text[])), '') || ' FROM ' || c.oid::regclass::text"
                " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid"
                " WHERE c.oid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped GROUP BY c.oid",
                {t, cli::text_array(o.exclude_columns)});
        } catch (const cli::DbError& e) {
            std::string m = e.what();
            m = m.substr(0, m.find('\n'));
            throw cli::DbError("table \"" + t + "\": " + m);
        }
        if (r.empty())
            throw cli::DbError("table \"" + t + "\" has no columns");
        Table table{r[0][1].value_or(t), r[0][0].value_or(""), r[0][2].value_or("{}"), r[0][3].value_or("")};
        for (const auto& c : o.exclude_columns) {
            auto has = db.query(
                "SELECT EXISTS (SELECT FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::oid"
                " AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped)",
                {table.oid, c});
            if (has.at(0).at(0) == cli::Cell("t"))
                used[c] = true;
        }
        out.push_back(table);
    }
    for (const auto& c : o.exclude_columns) {
        if (!used[c])
            throw cli::DbError("--exclude-column " + c + ": none of the tables has that column");
    }
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
    auto r = db.query("SELECT idem._row_digest(s)::text, count(*)::text, min(to_jsonb(s)::text) FROM (" + t.select +
                      ") s GROUP BY 1");
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

int do_rerun(const cli::Options& o)
{
    cli::Database db(o.conninfo);
    auto tables = resolve(db, o);
    std::vector<Result> results;
    std::vector<std::map<std::string, std::pair<long long, std::string>>> first_rows;
    std::string changed_table;
    int changed_run = 0;
    std::vector<std::string> added;
    std::vector<std::string> removed;

    for (int run = 1; run <= o.runs && changed_run == 0; ++run) {
        std::cerr << "run " << run << "/" << o.runs << ":";
        for (const auto& a : o.job)
            std::cerr << " " << a;
        std::cerr << std::endl;
        const int status = run_job(o.job);
        if (status != 0) {
            std::cerr << "pg_idempotent: run " << run << ": the command failed with exit status " << status
                      << std::endl;
            return kExitUsage;
        }
        for (std::size_t i = 0; i < tables.size(); ++i) {
            const auto started = std::chrono::steady_clock::now();
            std::cerr << "run " << run << ": checksumming " << tables[i].name << "..." << std::flush;
            const std::string c = checksum(db, tables[i]);
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            std::cerr << " " << secs << " s" << std::endl;
            results.push_back({run, tables[i].name, c});
            if (run == 1) {
                first_rows.push_back(rows_of(db, tables[i]));
                continue;
            }
            if (c == results[i].checksum || changed_run != 0)
                continue;
            changed_run = run;
            changed_table = tables[i].name;
            const auto now = rows_of(db, tables[i]);
            for (const auto& [digest, entry] : now) {
                auto it = first_rows[i].find(digest);
                const long long before = it == first_rows[i].end() ? 0 : it->second.first;
                for (long long k = before; k < entry.first && added.size() < kSampleRows; ++k)
                    added.push_back(entry.second);
            }
            for (const auto& [digest, entry] : first_rows[i]) {
                auto it = now.find(digest);
                const long long after = it == now.end() ? 0 : it->second.first;
                for (long long k = after; k < entry.first && removed.size() < kSampleRows; ++k)
                    removed.push_back(entry.second);
            }
        }
    }

    if (o.json) {
        const int runs_done = results.empty() ? 0 : results.back().run;
        std::cout << "{\"rerun_safe\": " << (changed_run == 0 ? "true" : "false") << ", \"runs\": " << o.runs
                  << ", \"runs_done\": " << runs_done << ", \"checksums\": [";
        for (std::size_t i = 0; i < results.size(); ++i)
            std::cout << (i ? ", " : "") << "{\"run\": " << results[i].run
                      << ", \"table\": " << json_string(results[i].table)
                      << ", \"checksum\": " << json_string(results[i].checksum) << "}";
        std::cout << "]";
        if (changed_run != 0) {
            std::cout << ", \"difference\": {\"run\": " << changed_run << ", \"table\": " << json_string(changed_table)
                      << ", \"added\": [";
            for (std::size_t i = 0; i < added.size(); ++i)
                std::cout << (i ? ", " : "") << added[i];
            std::cout << "], \"removed\": [";
            for (std::size_t i = 0; i < removed.size(); ++i)
                std::cout << (i ? ", " : "") << removed[i];
            std::cout << "]}";
        }
        std::cout << "}" << std::endl;
    } else {
        for (const auto& r : results)
            std::cout << "run " << r.run << "\t" << r.table << "\t" << r.checksum << "\n";
        if (changed_run == 0) {
            std::cout << "rerun-safe: every run left every table as run 1 did\n";
        } else {
            std::cout << "NOT rerun-safe: run " << changed_run << " changed " << changed_table << "\n";
            for (const auto& a : added)
                std::cout << "+ " << a << "\n";
            for (const auto& r : removed)
                std::cout << "- " << r << "\n";
        }
    }
    return changed_run == 0 ? kExitSafe : kExitDiffers;
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
