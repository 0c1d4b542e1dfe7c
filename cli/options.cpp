#include "options.hpp"

namespace pg_idempotent::cli {

const char* const kUsage =
    "pg_idempotent: prove that a data pipeline job is safe to run twice.\n"
    "\n"
    "Usage:\n"
    "  pg_idempotent rerun [-d CONNINFO] -t TABLE [-t TABLE ...] [--effects SCOPE ...] [--runs N]\n"
    "                      [--exclude-column COL ...] [--allow-unchanged] [--json]\n"
    "                      -- COMMAND [ARG ...]\n"
    "  pg_idempotent checksum [-d CONNINFO] [--json] TABLE ...\n"
    "  pg_idempotent dispatch --kind KIND [-d CONNINFO] [--scope SCOPE] [--workers N]\n"
    "                         [--lease SECONDS] [--poll SECONDS] -- COMMAND [ARG ...]\n"
    "  pg_idempotent --help\n"
    "\n"
    "rerun runs COMMAND N times (default 2), each run on its own, and after each run\n"
    "checksums the tables through the pg_idempotent extension (idem.checksum). Every\n"
    "run after the first must leave every table exactly as the first run did, and\n"
    "the first run must change at least one of them: a proof that watched nothing\n"
    "change proves nothing. A table that does not exist yet is \"absent\"; a job may\n"
    "create it in run 1 (a first dbt run, a migration then a load).\n"
    "\n"
    "COMMAND connects where rerun does: rerun sets, in COMMAND's environment, the\n"
    "libpq variables of the connection it made (PGHOST, PGPORT, PGDATABASE, PGUSER,\n"
    "PGSERVICE, PGPASSWORD, PGSSLMODE, PGOPTIONS, ... as libpq reads them), taken\n"
    "from -d and the environment, so a job that reads its own PG* environment\n"
    "(psql, a Python script with psycopg, dbt with env_var) writes the database\n"
    "rerun watches. A job that names its own connection must name the same one.\n"
    "\n"
    "dispatch delivers the effects of one kind that jobs recorded with\n"
    "idem.record_effect (docs/effects.md): each of N workers takes one effect at a time\n"
    "with a lease, runs COMMAND with the payload (JSON) on its stdin and\n"
    "IDEM_EFFECT_KEY, IDEM_EFFECT_ATTEMPT, IDEM_EFFECT_UNCERTAIN (1: an earlier attempt\n"
    "may have happened), IDEM_EFFECT_TOKEN, IDEM_EFFECT_KIND and IDEM_EFFECT_SCOPE in\n"
    "its environment, renews the lease while COMMAND runs, and reports its outcome:\n"
    "exit 0 done (stdout is the answer kept), 75 failed and retried after a backoff,\n"
    "killed by a signal uncertain and retried, any other status dead. Send the key to\n"
    "the receiver as its idempotency key. Workers wait on LISTEN between effects (and\n"
    "look again every --poll seconds, for retries that come due); SIGTERM or SIGINT\n"
    "lets the running commands finish, reports them, and stops.\n"
    "\n"
    "Options:\n"
    "  -d, --dbname CONNINFO    connection string or database name (default: the PG* environment)\n"
    "  -t, --table TABLE        a table (or view) the job writes; repeat for several\n"
    "      --effects SCOPE      rerun: the outbox of a scope the job records effects in\n"
    "                           (idem.record_effect): a run after the first must record\n"
    "                           no new effect; repeat for several\n"
    "      --runs N             how many times to run COMMAND (at least 2; default 2)\n"
    "      --exclude-column COL leave a column out of the comparison, in every table that has it\n"
    "                           (e.g. loaded_at); repeat for several\n"
    "      --allow-unchanged    let run 1 change none of the tables (a job with no new\n"
    "                           input is legitimately a no-op); without it that is exit 3\n"
    "      --json               print one JSON document on stdout instead of text\n"
    "      --kind KIND          dispatch: the kind of effect to deliver\n"
    "      --scope SCOPE        dispatch: the scope of the effects (default: default)\n"
    "      --workers N          dispatch: how many commands may run at once (default 1)\n"
    "      --lease SECONDS      dispatch: the lease of an attempt, renewed every third of it (default 30)\n"
    "      --poll SECONDS       dispatch: the longest wait between looks (default 5)\n"
    "  -h, --help               this help\n"
    "\n"
    "Exit status: 0 rerun-safe; 1 a run after the first changed a table (a sample of\n"
    "the rows that differ is printed); 2 usage or connection error, or a COMMAND\n"
    "that failed (its exit status is shown); 3 run 1 changed none of the tables, so\n"
    "nothing was proven (unless --allow-unchanged). Progress goes to stderr.\n"
    "\n"
    "Examples:\n"
    "  pg_idempotent rerun -d 'dbname=shop' -t daily_sales -- psql -d shop -f load_daily_sales.sql\n"
    "  pg_idempotent rerun -t staging.orders -t orders --runs 3 --exclude-column loaded_at \\\n"
    "      -- python3 jobs/load_orders.py --day 2024-07-07\n"
    "  pg_idempotent rerun -t marts.revenue --json -- dbt run --select revenue\n"
    "  pg_idempotent checksum -d shop public.daily_sales public.orders\n"
    "  pg_idempotent dispatch -d shop --kind stripe.charge --workers 4 -- ./charge.sh\n";

namespace {
bool needs_value(const std::vector<std::string>& args, std::size_t i, std::string& error)
{
    if (i + 1 >= args.size()) {
        error = "option " + args[i] + " needs a value";
        return false;
    }
    return true;
}

// A whole number of at least min for option name (the value after it).
bool whole_number(const std::vector<std::string>& args, std::size_t& i, int min, int& out, std::string& error)
{
    if (!needs_value(args, i, error))
        return false;
    const std::string& v = args[++i];
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6 || std::stoi(v) < min) {
        error = args[i - 1] + " needs a whole number of at least " + std::to_string(min) + ", not \"" + v + "\"";
        return false;
    }
    out = std::stoi(v);
    return true;
}

std::optional<Options> parse_dispatch(const std::vector<std::string>& args, std::string& error)
{
    Options o;
    o.command = Options::Command::kDispatch;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        bool ok = true;
        if (a == "--") {
            o.job.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
            break;
        } else if (a == "-d" || a == "--dbname" || a == "--kind" || a == "--scope") {
            if (!needs_value(args, i, error))
                return std::nullopt;
            (a == "--kind" ? o.kind : a == "--scope" ? o.scope : o.conninfo) = args[++i];
        } else if (a == "--workers") {
            ok = whole_number(args, i, 1, o.workers, error);
        } else if (a == "--lease") {
            ok = whole_number(args, i, 3, o.lease_seconds, error);
        } else if (a == "--poll") {
            ok = whole_number(args, i, 1, o.poll_seconds, error);
        } else {
            error = a == "-h" || a == "--help" ? "" : "unknown option \"" + a + "\" for dispatch";
            if (error.empty()) {
                o.command = Options::Command::kHelp;
                return o;
            }
            return std::nullopt;
        }
        if (!ok)
            return std::nullopt;
    }
    if (o.kind.empty())
        error = "dispatch needs --kind KIND";
    else if (o.job.empty())
        error = "dispatch needs the command to run after --";
    if (!error.empty())
        return std::nullopt;
    return o;
}

}  // namespace

std::optional<Options> parse(const std::vector<std::string>& args, std::string& error)
{
    Options o;
    if (args.empty()) {
        error = "no command given";
        return std::nullopt;
    }
    const std::string& cmd = args[0];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        o.command = Options::Command::kHelp;
        return o;
    }
    if (cmd == "dispatch")
        return parse_dispatch(args, error);
    if (cmd == "rerun")
        o.command = Options::Command::kRerun;
    else if (cmd == "checksum")
        o.command = Options::Command::kChecksum;
    else {
        error = "unknown command \"" + cmd + "\"";
        return std::nullopt;
    }
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            if (o.command != Options::Command::kRerun) {
                error = "\"--\" and a command belong to rerun";
                return std::nullopt;
            }
            o.job.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
            break;
        }
        if (a == "-h" || a == "--help") {
            o.command = Options::Command::kHelp;
            return o;
        } else if (a == "-d" || a == "--dbname") {
            if (!needs_value(args, i, error))
                return std::nullopt;
            o.conninfo = args[++i];
        } else if (a == "-t" || a == "--table") {
            if (!needs_value(args, i, error))
                return std::nullopt;
            o.tables.push_back(args[++i]);
        } else if (a == "--runs") {
            if (!needs_value(args, i, error))
                return std::nullopt;
            const std::string& v = args[++i];
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6) {
                error = "--runs needs a whole number, not \"" + v + "\"";
                return std::nullopt;
            }
            o.runs = std::stoi(v);
        } else if (a == "--effects" && o.command == Options::Command::kRerun) {
            if (!needs_value(args, i, error))
                return std::nullopt;
            o.effect_scopes.push_back(args[++i]);
        } else if (a == "--exclude-column") {
            if (!needs_value(args, i, error))
                return std::nullopt;
            o.exclude_columns.push_back(args[++i]);
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--allow-unchanged" && o.command == Options::Command::kRerun) {
            o.allow_unchanged = true;
        } else if (!a.empty() && a[0] == '-') {
            error = "unknown option \"" + a + "\"";
            return std::nullopt;
        } else if (o.command == Options::Command::kChecksum) {
            o.tables.push_back(a);
        } else {
            error = "unexpected argument \"" + a + "\" (put the job's command after --)";
            return std::nullopt;
        }
    }
    if (o.command == Options::Command::kRerun) {
        if (o.tables.empty() && o.effect_scopes.empty()) {
            error = "rerun needs at least one -t TABLE (or --effects SCOPE)";
            return std::nullopt;
        }
        if (o.job.empty()) {
            error = "rerun needs the job's command after --";
            return std::nullopt;
        }
        if (o.runs < 2) {
            error = "--runs must be at least 2";
            return std::nullopt;
        }
    }
    if (o.command == Options::Command::kChecksum && o.tables.empty()) {
        error = "checksum needs at least one TABLE";
        return std::nullopt;
    }
    return o;
}

}  // namespace pg_idempotent::cli
