#!/usr/bin/env python3
"""The Order workflow's reconciler, with the standard library only.

Inrun calls it once per step of an Order (Reserve, Charge, Ship), with the
step's name, its attempt and its idempotency key in the request. Each step
has a side effect, which this service does at most once per key, however
often Inrun asks (it retries failures, and asks again after a restart when
it had not recorded the answer): the first call does it and writes it to
the ledger, the others find it there and answer the same.

    python3 reconciler/orders.py    # listens on 127.0.0.1:$PORT (8094)

LEDGER names a file the ledger is kept in, one JSON line per side effect
done, so that it outlives this process and a test can count the effects;
without it the ledger lives in memory.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_VERSION = "inrun.dev/reconciler/v1alpha1"

lock = threading.Lock()
ledger = {}  # idempotency key -> the side effect done for it
ledger_file = os.environ.get("LEDGER", "")
outages = {}  # idempotency key -> payment failures so far (the demo's outage)


def load_ledger():
    if not ledger_file or not os.path.exists(ledger_file):
        return
    with open(ledger_file) as f:
        for line in f:
            if line.strip():
                entry = json.loads(line)
                ledger[entry["key"]] = entry


def record(key, order_uid, step, effect):
    """Does a step's side effect once per key: what a real service does
    against its payment provider or warehouse, keyed the same way."""
    if key in ledger:
        return ledger[key]
    entry = {"key": key, "order": order_uid, "step": step, "effect": effect}
    ledger[key] = entry
    if ledger_file:
        with open(ledger_file, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())
    log(f"{step}: {effect}")
    return entry


def reconcile(req):
    """Returns the ReconcileResult for one ReconcileRequest."""
    obj = req["object"]
    meta, spec = obj["metadata"], obj.get("spec", {})
    name, uid = meta["name"], meta["uid"]
    result = {"apiVersion": API_VERSION, "kind": "ReconcileResult"}
    if req.get("finalizing"):
        result["done"] = True  # nothing outside the cluster to undo
        return result

    step = req["step"]  # sent because the Blueprint declares reconcile.workflow
    key, args = step["idempotencyKey"], req["args"]
    answer = {}
    with lock:
        if step["name"] == "Reserve":
            record(key, uid, "Reserve", f"reserved {args['quantity']} x {args['item']}")
        elif step["name"] == "Charge":
            if spec.get("declined"):
                answer = {"phase": "Failed", "message": "the card was declined"}
            elif key not in ledger and outages.get(key, 0) < spec.get("paymentOutages", 0):
                # A failed call: Inrun retries it with backoff, with the
                # same key, up to the step's backoffLimit. (424, not 503:
                # Inrun retries 5xx within one call, which would hide the
                # failed attempts this demo shows.)
                outages[key] = outages.get(key, 0) + 1
                return None
            else:
                record(key, uid, "Charge", f"charged for {args['quantity']} x {args['item']}")
        elif step["name"] == "Ship":
            # The courier takes a moment: the first call answers Running,
            # and Inrun asks again after requeueAfter.
            if step["attempt"] == 1:
                answer = {"phase": "Running", "message": "waiting for the courier"}
                result["requeueAfter"] = "1s"
            else:
                record(key, uid, "Ship", f"shipped as TRK-{name}")
                answer = {"message": f"handed to the courier as TRK-{name}"}
        done = [e for e in ledger.values() if e["order"] == uid]
    if answer:
        result["step"] = answer
    # The Result is the whole of what the reconciler wants: the receipt and
    # the status say everything done so far, not only this step.
    receipt = {e["step"]: e["effect"] for e in done}
    result["resources"] = [{
        "id": "receipt",
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-receipt"},
        "data": receipt,
    }]
    status = {"receipt": f"{name}-receipt"}
    if "Ship" in receipt:
        status["tracking"] = f"TRK-{name}"
    result["status"] = status
    return result


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        try:
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            res = reconcile(req)
        except Exception as e:  # the message is shown on the Order
            self.reply(500, f"reconciler error: {e}".encode(), "text/plain")
            return
        if res is None:
            self.reply(424, b"the payment service failed", "text/plain")
            return
        self.reply(200, json.dumps(res).encode(), "application/json")

    def reply(self, code, body, ctype):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass  # one line per side effect is enough


def log(msg):
    print(msg, file=sys.stderr, flush=True)


if __name__ == "__main__":
    load_ledger()
    port = int(os.environ.get("PORT", "8094"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    log(f"order reconciler listening on 127.0.0.1:{port}")
    server.serve_forever()
