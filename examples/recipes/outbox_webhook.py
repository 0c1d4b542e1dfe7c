"""A webhook whose effect is an external API call, through the outbox
(docs/recipes.md, docs/effects.md), with psycopg.

- handle_refund_requested(conn, event): the webhook handler. In one
  transaction: claim the event's key (a redelivery is a duplicate), write the
  request, and record the refund as an effect keyed by the event. No call is
  made here: a crash anywhere leaves either all of it or nothing.
- send_refund(): the dispatcher's command, run once per attempt by
  `pg_idempotent dispatch --kind provider.refund --scope webhooks --
  python3 outbox_webhook.py`: the payload on stdin, the effect's key in
  IDEM_EFFECT_KEY, sent as the provider's Idempotency-Key. It prints the
  provider's answer (stored as the effect's answer) and exits 0; a failure
  the provider may retry exits 75; a refusal for good exits 1 (dead).

PROVIDER_URL is the provider's refund endpoint.
"""
import json
import os
import sys
import urllib.error
import urllib.request

SCOPE = "webhooks"


def handle_refund_requested(conn, event):
    """Records the refund once, with the request, however often the event
    is delivered; the dispatcher makes the call."""
    key = "refund:" + event["id"]
    with conn.transaction():
        if not conn.execute("SELECT idem.claim(%s, %s)", (key, SCOPE)).fetchone()[0]:
            return "duplicate"
        conn.execute("INSERT INTO refund_requests (event_id, amount) VALUES (%s, %s)", (event["id"], event["amount"]))
        conn.execute("SELECT idem.record_effect(%s, 'provider.refund', %s::jsonb, %s)",
                     (key, json.dumps({"event": event["id"], "amount": event["amount"]}), SCOPE))
        conn.execute("SELECT idem.complete(%s, NULL, %s)", (key, SCOPE))
    return "queued"


def send_refund():
    """One attempt: POST the payload with the effect's key as the
    Idempotency-Key. A resent key gets the first call's answer from the
    provider, so an attempt after a lost one (IDEM_EFFECT_UNCERTAIN=1)
    simply sends again."""
    request = urllib.request.Request(
        os.environ["PROVIDER_URL"], data=sys.stdin.buffer.read(), method="POST",
        headers={"Content-Type": "application/json", "Idempotency-Key": os.environ["IDEM_EFFECT_KEY"]})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            sys.stdout.write(response.read().decode())
            return 0
    except urllib.error.HTTPError as e:
        print(f"{os.environ['IDEM_EFFECT_KEY']}: HTTP {e.code}", file=sys.stderr)
        return 75 if e.code == 429 or e.code >= 500 else 1
    except OSError as e:  # no answer: the call may or may not have happened; the key makes resending safe
        print(f"{os.environ['IDEM_EFFECT_KEY']}: {e}", file=sys.stderr)
        return 75


if __name__ == "__main__":
    sys.exit(send_refund())
