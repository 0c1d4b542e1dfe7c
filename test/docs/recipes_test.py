#!/usr/bin/python3
"""The Python recipes of docs/recipes.md, run against the test cluster
(PGHOST/PGPORT/PGUSER of the docs suite), with Debian's python3-psycopg:

- load_day (the Airflow task): the first run creates the day's partition and
  writes it, the rerun writes nothing;
- the webhook handler (examples/recipes/webhook.py): two concurrent
  deliveries of an order_paid event fulfil the order once; a worker killed
  between the provider's refund and its commit, then a redelivery: one call
  at the provider, one refund recorded; the same without the save_point and
  the reconciliation calls the provider twice (the recipe's reason to be);
  two concurrent deliveries of a refund call the provider once;
- the webhook through the outbox (examples/recipes/outbox_webhook.py): two
  concurrent deliveries record one effect; pg_idempotent dispatch runs the
  recipe's command against an HTTP provider (a server in this process that
  counts calls and answers a repeated Idempotency-Key with its first
  answer), which drops the connection after applying one refund and answers
  503 to another's first call: every refund applied once, the lost call sent
  again with the same key, each effect done with the provider's answer.

The provider is a table in a database of its own, written outside the
handler's transaction (a call that happened stays, as an HTTP call would).
Prints TAP lines ("ok N - name"); exits 1 on any failure.
"""
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "recipes"))
import load_day as airflow_recipe  # noqa: E402
import webhook  # noqa: E402
import outbox_webhook  # noqa: E402

DB = "idem_docs_recipes"
PROVIDER_DB = "idem_docs_provider"
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}")
    if not ok and detail:
        print("# " + str(detail).replace("\n", "\n# "))


def connect(db, **kw):
    return psycopg.connect(dbname=db, **kw)


class Provider:
    """A refund API that counts every call and answers each Idempotency-Key
    with the result of its first call (as Stripe does)."""

    def __init__(self):
        self.conn = connect(PROVIDER_DB, autocommit=True)

    def refund(self, key, event):
        self.conn.execute("INSERT INTO calls (key) VALUES (%s)", (key,))
        return "ref-" + key

    def status(self, key):
        row = self.conn.execute("SELECT 'ref-' || key FROM calls WHERE key = %s LIMIT 1", (key,)).fetchone()
        return row[0] if row else None

    def calls(self, key):
        return self.conn.execute("SELECT count(*) FROM calls WHERE key = %s", (key,)).fetchone()[0]


def setup():
    with connect("postgres", autocommit=True) as admin:
        for db in (DB, PROVIDER_DB):
            admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {db}")
    with connect(DB, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_idempotent")
        conn.execute("CREATE TABLE fulfilments (order_id int, amount numeric)")
        conn.execute("CREATE TABLE refunds (event_id text, provider_ref text)")
        conn.execute("CREATE TABLE refund_requests (event_id text, amount numeric)")
        conn.execute("CREATE TABLE raw_orders (day date, store text, amount numeric)")
        conn.execute("INSERT INTO raw_orders VALUES ('2024-07-07', 's1', 10), ('2024-07-07', 's1', 5),"
                     " ('2024-07-07', 's2', 7), ('2024-07-08', 's1', 1)")
        conn.execute("CREATE TABLE daily_sales (day date NOT NULL, store text, amount numeric) PARTITION BY RANGE (day)")
        conn.execute("CREATE TABLE daily_sales_20240706 PARTITION OF daily_sales"
                     " FOR VALUES FROM ('2024-07-06') TO ('2024-07-07')")
    with connect(PROVIDER_DB, autocommit=True) as conn:
        conn.execute("CREATE TABLE calls (key text, at timestamptz DEFAULT clock_timestamp())")


def test_load_day():
    with connect(DB) as conn:
        first = airflow_recipe.load_day(conn, "2024-07-07")
        again = airflow_recipe.load_day(conn, "2024-07-07")
        rows = conn.execute("SELECT tableoid::regclass::text, store, amount FROM daily_sales ORDER BY store").fetchall()
    check("load_day: the first run creates the partition and writes the day",
          first == {"action": "rewritten", "rows_before": 0, "rows_after": 2}, first)
    check("load_day: the rerun writes nothing", again == {"action": "skipped", "rows_before": 2, "rows_after": 2}, again)
    check("load_day: the rows are the day's, in its new partition",
          rows == [("daily_sales_20240707", "s1", 15), ("daily_sales_20240707", "s2", 7)], rows)


def concurrently(fn, n=2):
    start = threading.Barrier(n)
    out = [None] * n

    def run(i):
        with connect(DB, autocommit=True) as conn:
            start.wait()
            out[i] = fn(conn)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(out)


def test_order_paid():
    event = {"id": "evt-1", "order_id": 42, "amount": 19.90}
    outcomes = concurrently(lambda conn: webhook.handle_order_paid(conn, event))
    with connect(DB) as conn:
        n = conn.execute("SELECT count(*) FROM fulfilments WHERE order_id = 42").fetchone()[0]
        again = webhook.handle_order_paid(conn, event)
    check("order_paid: two concurrent deliveries fulfil the order once",
          outcomes == ["duplicate", "fulfilled"] and n == 1, (outcomes, n))
    check("order_paid: a later redelivery is a duplicate", again == "duplicate", again)


def deliver_until_done(handler, event, provider, lease):
    """A redelivery loop, as a queue retries: a live lease of another worker
    (55P03) is retried after a moment."""
    for _ in range(100):
        try:
            with connect(DB, autocommit=True) as conn:
                return handler(conn, event, provider, lease=lease)
        except psycopg.errors.LockNotAvailable:
            time.sleep(0.1)
    raise RuntimeError("the lease never ended")


def crash_then_redeliver(handler_name, event_id):
    """A worker process that dies right after the provider's answer, then a
    redelivery here; returns (provider calls, refunds recorded, outcome)."""
    code = (
        "import os, sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
        "import recipes_test as t, webhook\n"
        "with t.connect(t.DB, autocommit=True) as conn:\n"
        "    webhook.%s(conn, {'id': %r}, t.Provider(), lease='1 second',\n"
        "               crash_after_call=lambda: os._exit(3))\n"
    ) % (os.path.join(ROOT, "examples", "recipes"), os.path.dirname(os.path.abspath(__file__)), handler_name, event_id)
    worker = subprocess.run([sys.executable, "-c", code], env=os.environ, capture_output=True, text=True)
    if worker.returncode != 3:
        raise RuntimeError(f"the worker did not die where planned: {worker.returncode} {worker.stderr}")
    time.sleep(1.2)  # the dead worker's lease runs out
    provider = Provider()
    outcome = deliver_until_done(getattr(webhook, handler_name), {"id": event_id}, provider, "30 seconds")
    with connect(DB) as conn:
        recorded = conn.execute("SELECT count(*) FROM refunds WHERE event_id = %s", (event_id,)).fetchone()[0]
    return provider.calls("refund:" + event_id), recorded, outcome


def test_refund_crash():
    calls, recorded, outcome = crash_then_redeliver("handle_refund", "evt-2")
    check("refund: a worker killed between the call and the commit, then a redelivery: one call, one refund",
          (calls, recorded, outcome) == (1, 1, "refunded"), (calls, recorded, outcome))
    calls, recorded, outcome = crash_then_redeliver("handle_refund_naively", "evt-3")
    check("refund without save_point and reconciliation: the same crash calls the provider twice",
          (calls, recorded) == (2, 1), (calls, recorded, outcome))


def test_refund_concurrent():
    provider = Provider()
    outcomes = [None, None]
    start = threading.Barrier(2)

    def run(i):
        start.wait()
        outcomes[i] = deliver_until_done(webhook.handle_refund, {"id": "evt-4"}, Provider(), "30 seconds")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("refund: two concurrent deliveries call the provider once",
          sorted(outcomes) == ["duplicate", "refunded"] and provider.calls("refund:evt-4") == 1,
          (outcomes, provider.calls("refund:evt-4")))


class RefundAPI(http.server.BaseHTTPRequestHandler):
    """A provider's refund endpoint: counts every call per Idempotency-Key,
    applies a key once and answers it again with that first answer. Its
    faults, once each: for refund:evt-7 it applies the refund and drops the
    connection unanswered (a timeout after the request was sent); for
    refund:evt-8 it answers 503 without applying."""
    lock = threading.Lock()
    calls = {}
    applied = {}

    def do_POST(self):
        key = self.headers["Idempotency-Key"]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            n = self.calls[key] = self.calls.get(key, 0) + 1
            if key == "refund:evt-8" and n == 1:
                self.send_error(503)
                return
            if key not in self.applied:
                self.applied[key] = {"refund": "re_%d" % (len(self.applied) + 1), "amount": body["amount"]}
            answer = json.dumps(self.applied[key]).encode()
        if key == "refund:evt-7" and n == 1:
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def cli_path():
    bindir = os.environ.get("PGBIN") or subprocess.run(
        ["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
    return os.path.join(bindir, "pg_idempotent")


def test_outbox():
    outcomes = concurrently(lambda conn: outbox_webhook.handle_refund_requested(conn, {"id": "evt-5", "amount": 5}))
    with connect(DB, autocommit=True) as conn:
        for i in (6, 7, 8):
            outbox_webhook.handle_refund_requested(conn, {"id": "evt-%d" % i, "amount": i})
    check("outbox: two concurrent deliveries of the webhook record one effect",
          outcomes == ["duplicate", "queued"], outcomes)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RefundAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(os.environ, PROVIDER_URL="http://127.0.0.1:%d/refunds" % server.server_address[1])
    dispatcher = subprocess.Popen(
        [cli_path(), "dispatch", "-d", "dbname=" + DB, "--kind", "provider.refund", "--scope", "webhooks",
         "--workers", "2", "--lease", "5", "--poll", "1", "--",
         sys.executable, os.path.join(ROOT, "examples", "recipes", "outbox_webhook.py")],
        env=env, stderr=subprocess.PIPE, text=True)
    try:
        with connect(DB, autocommit=True) as conn:
            for _ in range(300):
                if conn.execute("SELECT count(*) FROM idem.effects WHERE scope = 'webhooks' AND state <> 'done'"
                                ).fetchone()[0] == 0:
                    break
                time.sleep(0.1)
            done = conn.execute("SELECT key, answer FROM idem.effects WHERE scope = 'webhooks'"
                                " AND kind = 'provider.refund' AND state = 'done' ORDER BY key").fetchall()
    finally:
        dispatcher.send_signal(signal.SIGTERM)
        _, log = dispatcher.communicate(timeout=30)
        server.shutdown()
    check("outbox: the dispatcher stops on SIGTERM with status 0", dispatcher.returncode == 0,
          (dispatcher.returncode, log))
    check("outbox: each refund applied once at the provider, the lost call and the 503 sent again with their keys",
          sorted(RefundAPI.applied) == ["refund:evt-%d" % i for i in (5, 6, 7, 8)]
          and RefundAPI.calls == {"refund:evt-5": 1, "refund:evt-6": 1, "refund:evt-7": 2, "refund:evt-8": 2},
          (RefundAPI.calls, log))
    check("outbox: every effect done, its answer the provider's",
          [(k, a) for k, a in done] == [(k, RefundAPI.applied[k]) for k in sorted(RefundAPI.applied)], done)


def main():
    setup()
    try:
        test_load_day()
        test_order_paid()
        test_refund_crash()
        test_refund_concurrent()
        test_outbox()
    finally:
        with connect("postgres", autocommit=True) as admin:
            for db in (DB, PROVIDER_DB):
                admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    print(f"1..{len(results)}")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
