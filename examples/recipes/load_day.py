"""An Airflow task that reloads one day of a partitioned fact table
(docs/recipes.md). The day is bound to the query's $1 with idem.params, never
formatted into SQL text; a missing partition is created; a rerun of the task
(a retry, a backfill) finds the same rows and writes nothing.

The work is a plain function of a psycopg connection, so it runs, and is
tested, without Airflow; the DAG wraps it:

    from airflow.decorators import task
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    @task
    def reload_day(ds=None):
        with psycopg.connect(PostgresHook("warehouse").get_uri()) as conn:
            return load_day(conn, ds)
"""
import datetime

QUERY = """
    SELECT o.day, o.store, sum(o.amount) AS amount
      FROM raw_orders o
     WHERE o.day = $1
     GROUP BY o.day, o.store
"""


def load_day(conn, ds):
    """Overwrites the partition of day ds ('YYYY-MM-DD'); returns what it did."""
    day = datetime.date.fromisoformat(ds)
    with conn.transaction():
        row = conn.execute(
            "SELECT action, rows_before, rows_after"
            "  FROM idem.overwrite_partition('daily_sales', %s::date, %s,"
            "       params => idem.params(%s::date), create_partition => true)",
            (day, QUERY, day)).fetchone()
    return {"action": row[0], "rows_before": row[1], "rows_after": row[2]}
