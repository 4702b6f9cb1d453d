#!/usr/bin/env python3
"""The App reconciler, in Python with the standard library only.

Inrun POSTs a ReconcileRequest and applies the ReconcileResult this answers.
This reconciler reads only reconcile.args (name, repository, version,
replicas): what the Blueprint chose to send. It never reads the App, so the
App's shape can change without touching this file.

It returns a Deployment that runs <repository>:<version>, labelled with
the version, a Service in front of it, and a status: phase, url and
readyReplicas.

    python3 reconciler/reconciler.py     # listens on 127.0.0.1:$PORT (8090)
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_VERSION = "inrun.dev/reconciler/v1alpha1"


def reconcile(req):
    """Returns the ReconcileResult for one ReconcileRequest."""
    result = {"apiVersion": API_VERSION, "kind": "ReconcileResult"}
    if req.get("finalizing"):
        # Nothing outside the cluster to clean up: the children are Inrun's.
        result["done"] = True
        return result

    args = req["args"]
    name, version = args["name"], args["version"]
    labels = {"app": name}
    deployment = {
        "id": "deployment",
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # The version is a label, so that kubectl get -l finds an app's
        # copies by version. A version a label cannot hold (1.0+build.5)
        # is refused by the cluster: the caller's view says which field.
        "metadata": {"name": name, "labels": {**labels, "app.kubernetes.io/version": version}},
        "spec": {
            "replicas": args["replicas"],
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "app",
                    "image": f"{args['repository']}:{version}",
                    "ports": [{"name": "http", "containerPort": 8080}],
                }]},
            },
        },
    }
    service = {
        "id": "service",
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    result["resources"] = [deployment, service]

    # What the cluster says of the Deployment returned last time.
    ready = 0
    for child in req.get("observed", []):
        if child.get("id") == "deployment":
            ready = child.get("status", {}).get("readyReplicas", 0)
    result["status"] = {
        "phase": "Running" if ready >= args["replicas"] else "Pending",
        "readyReplicas": ready,
        "url": f"http://{name}",
    }
    log(f"reconcile {name}: {args['repository']}:{version} x{args['replicas']}, {ready} ready")
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
    port = int(os.environ.get("PORT", "8090"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    log(f"App reconciler (Python) on http://127.0.0.1:{port}/reconcile")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
