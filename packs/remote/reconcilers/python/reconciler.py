#!/usr/bin/env python3
"""The WebApp reconciler in Python, with the standard library only.

Inrun POSTs a ReconcileRequest (the WebApp, the Blueprint's args, the
children it observed, and whether the WebApp is being deleted) and applies
the ReconcileResult this answers: a Deployment, a Service while args.expose
is true, and a status. The Go and bash reconcilers answer exactly the same.

    python3 reconcilers/python/reconciler.py     # listens on 127.0.0.1:$PORT (8088)
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_VERSION = "inrun.dev/reconciler/v1alpha1"


def reconcile(req):
    """Returns the ReconcileResult for one ReconcileRequest."""
    meta = req["object"]["metadata"]
    name, namespace = meta["name"], meta.get("namespace", "")
    result = {"apiVersion": API_VERSION, "kind": "ReconcileResult"}
    if req.get("finalizing"):
        # Nothing outside the cluster to clean up: the children are Inrun's.
        log(f"finalizing {namespace}/{name}: done")
        result["done"] = True
        return result

    args = req["args"]
    labels = {"app": name}
    deployment = {
        "id": "deployment",
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": args["replicas"],
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "web",
                    "image": args["image"],
                    "ports": [{"name": "http", "containerPort": 80}],
                }]},
            },
        },
    }
    result["resources"] = [deployment]

    # What the cluster says of the Deployment returned last time.
    ready = 0
    for child in req.get("observed", []):
        if child.get("id") == "deployment":
            ready = child.get("status", {}).get("readyReplicas", 0)
    status = {"phase": "Running" if ready >= args["replicas"] else "Pending", "readyReplicas": ready}

    if args["expose"]:
        result["resources"].append({
            "id": "service",
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "selector": labels,
                "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
            },
        })
        status["url"] = f"http://{name}.{namespace}.svc"
    result["status"] = status

    log(f"reconcile {namespace}/{name}: " + ", ".join(r["id"] for r in result["resources"]))
    return result


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length", 0))
            req = json.loads(self.rfile.read(length))
            if req.get("apiVersion") != API_VERSION or req.get("kind") != "ReconcileRequest":
                return self.reply(400, f"want a ReconcileRequest of {API_VERSION}\n")
            body = reconcile(req)
        except (ValueError, KeyError, TypeError) as e:
            return self.reply(400, f"not a ReconcileRequest this reconciler understands: {e!r}\n")
        self.reply(200, json.dumps(body), "application/json")

    def do_GET(self):
        self.reply(405, "send a ReconcileRequest with POST\n")

    def reply(self, code, body, content_type="text/plain; charset=utf-8"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass  # reconcile() logs what matters


def main():
    port = int(os.environ.get("PORT", "8088"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    log(f"WebApp reconciler (Python) on http://127.0.0.1:{port}/reconcile")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
