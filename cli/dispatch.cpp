#include "dispatch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "database.hpp"

namespace pg_idempotent::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop(int)
{
    g_stop = 1;
}

void catch_stop_signals()
{
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a command that does not read its stdin
}

// The exit status that asks for a retry (EX_TEMPFAIL of sysexits.h).
constexpr int kRetryStatus = 75;
constexpr std::size_t kMostAnswerBytes = 1 << 20;

struct Effect {
    std::string key;
    std::string payload;
    std::string token;
    std::string attempt;
    bool uncertain = false;
};

struct Attempt {
    int status = -1;     // the command's exit status; -1: killed by a signal, or not run
    std::string answer;  // its stdout (at most kMostAnswerBytes)
    bool lease_lost = false;
};

void log(const std::string& what)
{
    std::cerr << "pg_idempotent dispatch[" << getpid() << "]: " << what << std::endl;
}

// The command, its stdin the payload and its stdout a pipe back: the
// child's side of run_command.
[[noreturn]] void exec_command(const DispatchOptions& o, const Effect& e, int in, int out)
{
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    close(in);
    close(out);
    signal(SIGPIPE, SIG_DFL);
    setenv("IDEM_EFFECT_KEY", e.key.c_str(), 1);
    setenv("IDEM_EFFECT_KIND", o.kind.c_str(), 1);
    setenv("IDEM_EFFECT_SCOPE", o.scope.c_str(), 1);
    setenv("IDEM_EFFECT_ATTEMPT", e.attempt.c_str(), 1);
    setenv("IDEM_EFFECT_TOKEN", e.token.c_str(), 1);
    setenv("IDEM_EFFECT_UNCERTAIN", e.uncertain ? "1" : "0", 1);
    std::vector<char*> argv;
    for (const auto& a : o.command)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "pg_idempotent dispatch: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
}

// Renews the lease of e; false when its token no longer owns it. A broken
// connection is not a lost lease: the command runs on, and the report is
// made on the next connection.
bool renew(Database& db, const DispatchOptions& o, const Effect& e)
{
    try {
        db.query("SELECT idem.renew_effect($1, $2::bigint, $3::interval, $4)",
                 {e.key, e.token, std::to_string(o.lease_seconds) + " seconds", o.scope});
        return true;
    } catch (const DbError& err) {
        log("effect " + e.key + ": renewing the lease: " + err.what());
        return err.sqlstate != "ID004";
    }
}

// Runs the command for one attempt: feeds the payload, collects stdout,
// renews the lease every third of it, and waits for the exit.
Attempt run_command(Database& db, const DispatchOptions& o, const Effect& e)
{
    Attempt a;
    int in[2];
    int out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t child = fork();
    if (child < 0)
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (child == 0) {
        close(in[1]);
        close(out[0]);
        exec_command(o, e, in[0], out[1]);
    }
    close(in[0]);
    close(out[1]);
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    std::size_t written = 0;
    int to_child = in[1];
    int from_child = out[0];
    auto renew_at = std::chrono::steady_clock::now() + std::chrono::seconds(o.lease_seconds) / 3;
    while (from_child >= 0) {
        if (to_child >= 0 && written == e.payload.size()) {
            close(to_child);
            to_child = -1;
        }
        pollfd fds[2] = {{from_child, POLLIN, 0}, {to_child, POLLOUT, 0}};
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(renew_at - std::chrono::steady_clock::now());
        const int ready = poll(fds, to_child >= 0 ? 2 : 1, static_cast<int>(std::max<long long>(0, wait.count())));
        if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            char buf[65536];
            const ssize_t n = read(from_child, buf, sizeof buf);
            if (n <= 0) {
                close(from_child);
                from_child = -1;
            } else if (a.answer.size() < kMostAnswerBytes) {
                a.answer.append(buf, static_cast<std::size_t>(n));
            }
        }
        if (ready > 0 && to_child >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
            const ssize_t n = write(to_child, e.payload.data() + written, e.payload.size() - written);
            if (n > 0)
                written += static_cast<std::size_t>(n);
            else if (errno != EAGAIN && errno != EINTR)
                written = e.payload.size();  // EPIPE: it reads no more
        }
        if (std::chrono::steady_clock::now() >= renew_at) {
            if (!a.lease_lost && !renew(db, o, e))
                a.lease_lost = true;
            renew_at = std::chrono::steady_clock::now() + std::chrono::seconds(o.lease_seconds) / 3;
        }
    }
    if (to_child >= 0)
        close(to_child);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    a.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (a.answer.size() > kMostAnswerBytes)
        a.answer.resize(kMostAnswerBytes);
    return a;
}

// done with the answer as jsonb when it is JSON, else as a JSON string.
void report_done(Database& db, const DispatchOptions& o, const Effect& e, const std::string& answer)
{
    try {
        db.query("SELECT idem.effect_done($1, $2::bigint, $3::jsonb, $4)", {e.key, e.token, answer, o.scope});
    } catch (const DbError& err) {
        if (err.sqlstate != "22P02")
            throw;
        db.query("SELECT idem.effect_done($1, $2::bigint, pg_catalog.to_jsonb($3::text), $4)",
                 {e.key, e.token, answer, o.scope});
    }
}

// exit 0: done; 75: failed, retried; killed by a signal: uncertain (the
// call may have happened), retried; any other status: dead. A report the
// token may no longer make (ID004) is logged; other errors go up.
void report(Database& db, const DispatchOptions& o, const Effect& e, const Attempt& a)
{
    try {
        if (a.status == 0) {
            report_done(db, o, e, a.answer);
            log("effect " + e.key + " (attempt " + e.attempt + "): done");
            return;
        }
        Rows r;
        std::string error;
        if (a.status < 0) {
            error = "the command was killed by a signal";
            r = db.query("SELECT idem.effect_uncertain($1, $2::bigint, $3, NULL, $4)",
                         {e.key, e.token, error, o.scope});
        } else {
            error = "the command exited with " + std::to_string(a.status);
            r = db.query("SELECT idem.effect_failed($1, $2::bigint, $3, $4::boolean, NULL, $5)",
                         {e.key, e.token, error, a.status == kRetryStatus ? "true" : "false", o.scope});
        }
        log("effect " + e.key + " (attempt " + e.attempt + "): " + error + ", now " + r.at(0).at(0).value_or("?"));
    } catch (const DbError& err) {
        if (err.sqlstate != "ID004")
            throw;
        log("effect " + e.key + ": the report was refused: " + err.what());
    }
}

std::optional<Effect> take_one(Database& db, const DispatchOptions& o, const std::string& me)
{
    const Rows r = db.query(
        "SELECT key, payload::text, token::text, attempt::text, uncertain::text"
        " FROM idem.take_effects($1, 1, $2::interval, $3, $4)",
        {o.kind, std::to_string(o.lease_seconds) + " seconds", o.scope, me});
    if (r.empty())
        return std::nullopt;
    return Effect{*r[0][0], *r[0][1], *r[0][2], *r[0][3], r[0][4] == Cell("true")};
}

// How a worker with nothing to take waits (docs/effects.md, "Waking
// dispatchers"). Recorders NOTIFY only while a dispatcher rings the
// doorbell (idem.listen_effects); one that recorded just before it rang
// did not, so the worker looks again after each such transaction could have
// ended, then waits on LISTEN, looking at least every --poll seconds. With
// work again it stops ringing: a busy worker needs no NOTIFY.
class Idle {
public:
    explicit Idle(const DispatchOptions& o) : o_(o) {}

    // After a take that found nothing; the worker looks again on return.
    void wait(Database& db)
    {
        if (!listening_) {
            const Rows r =
                db.query("SELECT rung::text, settle_after::text FROM idem.listen_effects($1, $2)", {o_.kind, o_.scope});
            settle_after_ = r.at(0).at(1);
            backoff_ms_ = 10;
            listening_ = true;
            if (r.at(0).at(0) != Cell("true")) {  // recorders probed it at each try: poll, ring later
                db.wait_for_notification(std::min(o_.poll_seconds, 1) * 1000);
                busy(db);
            }
            return;
        }
        if (settle_after_) {
            db.wait_for_notification(backoff_ms_);
            backoff_ms_ = std::min(backoff_ms_ * 2, o_.poll_seconds * 1000);
            const Rows r = db.query(
                "SELECT (pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) OPERATOR(pg_catalog.>)"
                " $1::pg_catalog.xid8)::text",
                {settle_after_});
            if (r.at(0).at(0) == Cell("true"))
                settle_after_.reset();
            return;
        }
        db.wait_for_notification(o_.poll_seconds * 1000);
    }

    // After a take that found an effect.
    void busy(Database& db)
    {
        if (listening_)
            db.query("SELECT idem.unlisten_effects($1, $2)", {o_.kind, o_.scope});
        listening_ = false;
    }

private:
    const DispatchOptions& o_;
    bool listening_ = false;
    Cell settle_after_;  // xid8: look again once no older transaction runs
    int backoff_ms_ = 10;
};

// Whether an error means this worker cannot work at all (wrong grants, no
// extension, a bad kind) rather than a connection to make again.
bool fatal(const DbError& err)
{
    const std::string& s = err.sqlstate;
    return !s.empty() && (s.rfind("42", 0) == 0 || s.rfind("22", 0) == 0 || s == "55000" || s == "3F000");
}

std::string worker_name()
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(getpid());
}

// An attempt whose outcome is not reported yet: made again on the next
// connection when the one it ran on broke.
struct Unreported {
    Effect effect;
    Attempt attempt;
};

// One worker: its own connection, made again after it breaks.
int work(const DispatchOptions& o)
{
    catch_stop_signals();
    const std::string me = worker_name();
    std::optional<Unreported> unreported;
    while (true) {
        try {
            Database db(o.conninfo);
            if (unreported) {
                report(db, o, unreported->effect, unreported->attempt);
                unreported.reset();
            }
            Idle idle(o);
            while (g_stop == 0) {
                std::optional<Effect> e = take_one(db, o, me);
                if (!e) {
                    idle.wait(db);
                    continue;
                }
                idle.busy(db);
                if (e->uncertain)
                    log("effect " + e->key + " (attempt " + e->attempt + "): an earlier attempt may have happened");
                unreported = Unreported{*e, run_command(db, o, *e)};
                if (unreported->attempt.lease_lost)
                    log("effect " + e->key + ": lease lost while the command ran; not reported");
                else
                    report(db, o, *e, unreported->attempt);
                unreported.reset();
            }
            return 0;
        } catch (const DbError& err) {
            if (fatal(err)) {
                log(err.what());
                return 2;
            }
            if (g_stop != 0 && !unreported)
                return 0;
            log(std::string(err.what()) + "; connecting again in 1 s");
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
    }
}

// A worker process. It dies with the dispatcher (a SIGKILL of the
// dispatcher must not leave workers taking effects nobody watches).
pid_t start_worker(const DispatchOptions& o)
{
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(0);
        _exit(work(o));
    }
    if (pid < 0)
        log(std::string("fork: ") + std::strerror(errno));
    return pid;
}

}  // namespace

// Keeps o.workers workers: one killed by a signal (an OOM kill, a kill -9)
// is started again; one that exits is not (2: it cannot work at all).
// SIGTERM and SIGINT are passed on, and the running attempts finish.
int dispatch(const DispatchOptions& o)
{
    catch_stop_signals();
    std::vector<pid_t> workers;
    for (int i = 0; i < o.workers; ++i)
        if (const pid_t pid = start_worker(o); pid > 0)
            workers.push_back(pid);
    int worst = 0;
    bool forwarded = false;
    while (!workers.empty()) {
        int status = 0;
        const pid_t done = waitpid(-1, &status, 0);
        if (done < 0) {
            if (errno != EINTR)
                break;
            if (g_stop != 0 && !forwarded) {
                for (const pid_t w : workers)
                    kill(w, SIGTERM);
                forwarded = true;
            }
            continue;
        }
        for (auto& w : workers) {
            if (w != done)
                continue;
            w = -1;
            if (WIFEXITED(status) && WEXITSTATUS(status) > worst)
                worst = WEXITSTATUS(status);
            if (WIFSIGNALED(status) && g_stop == 0) {
                log("worker " + std::to_string(done) + " was killed by signal " + std::to_string(WTERMSIG(status)) +
                    "; starting another");
                w = start_worker(o);
            }
        }
        workers.erase(std::remove(workers.begin(), workers.end(), -1), workers.end());
    }
    return worst;
}

}  // namespace pg_idempotent::cli
