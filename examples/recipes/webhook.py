"""A webhook handler that survives redeliveries, with psycopg (docs/recipes.md).

Two kinds of effect:

- order_paid: the effect is in the database (a fulfilment row). Claim the
  event's key, write, complete, in one transaction: a redelivery finds the
  key done; a crash before COMMIT leaves nothing, and the redelivery does it.
- refund: the effect is an external call (a payment provider's refund API),
  which no transaction can roll back. Claim the key with a lease, record
  "calling" (save_point, committed) before the call, call with the key as the
  provider's Idempotency-Key, then complete. A worker that takes the key over
  after a crash and finds "calling" asks the provider whether the call took
  hold, and completes with its answer instead of calling again.

`provider` is what the handler calls: refund(key, payload) -> result and
status(key) -> the result of an earlier refund with that key, or None.
"""
import json

SCOPE = "webhooks"


def handle_order_paid(conn, event):
    """Fulfils an order once, however often the event is delivered."""
    key = "order_paid:" + event["id"]
    with conn.transaction():
        claimed = conn.execute("SELECT idem.claim(%s, %s)", (key, SCOPE)).fetchone()[0]
        if not claimed:
            return "duplicate"
        conn.execute("INSERT INTO fulfilments (order_id, amount) VALUES (%s, %s)",
                     (event["order_id"], event["amount"]))
        conn.execute("SELECT idem.complete(%s, NULL, %s)", (key, SCOPE))
    return "fulfilled"


def handle_refund(conn, event, provider, lease="30 seconds", crash_after_call=None):
    """Refunds once at the provider, however often the event is delivered
    and wherever a worker dies. crash_after_call (tests only) is called right
    after the provider answered, before anything is recorded."""
    key = "refund:" + event["id"]
    with conn.transaction():
        token = conn.execute("SELECT idem.claim_lease(%s, %s, %s::interval, wait => false)",
                             (key, SCOPE, lease)).fetchone()[0]
    if token is None:
        return "duplicate"
    point = conn.execute("SELECT recovery_point FROM idem.key_status(%s, %s)", (key, SCOPE)).fetchone()[0]
    result = provider.status(key) if point == "calling" else None  # reconcile after a takeover
    if result is None:
        with conn.transaction():  # committed before the call, so a takeover knows it may have happened
            conn.execute("SELECT idem.save_point(%s, 'calling', %s, %s)", (key, SCOPE, token))
        result = provider.refund(key, event)
        if crash_after_call:
            crash_after_call()
    with conn.transaction():
        conn.execute("SELECT idem.check_lease(%s, %s, %s)", (key, SCOPE, token))
        conn.execute("INSERT INTO refunds (event_id, provider_ref) VALUES (%s, %s)", (event["id"], result))
        conn.execute("SELECT idem.complete(%s, %s::jsonb, %s, %s)", (key, json.dumps(result), SCOPE, token))
    return "refunded"


def handle_refund_naively(conn, event, provider, lease="30 seconds", crash_after_call=None):
    """The same without the save_point and the reconciliation: after a crash
    between the call and the commit, the next worker calls again."""
    key = "refund:" + event["id"]
    with conn.transaction():
        token = conn.execute("SELECT idem.claim_lease(%s, %s, %s::interval, wait => false)",
                             (key, SCOPE, lease)).fetchone()[0]
    if token is None:
        return "duplicate"
    result = provider.refund(key, event)
    if crash_after_call:
        crash_after_call()
    with conn.transaction():
        conn.execute("INSERT INTO refunds (event_id, provider_ref) VALUES (%s, %s)", (event["id"], result))
        conn.execute("SELECT idem.complete(%s, %s::jsonb, %s, %s)", (key, json.dumps(result), SCOPE, token))
    return "refunded"
