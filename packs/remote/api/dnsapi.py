#!/usr/bin/env python3
"""A small DNS provider's REST API, of the most common shape, that knows
nothing about Inrun. The Blueprint next to this file maps it with
reconcile.api.

  POST   /records           create a record; the API assigns its id (201)
  GET    /records?name=N    find records by name
  GET    /records/{id}      read one (404 when there is none)
  PUT    /records/{id}      replace one
  DELETE /records/{id}      delete one (204)

A PUT that changes nothing changes no version. A name already taken is 409. An Idempotency-Key header is honoured as the
IETF draft says: the same key and body get the first answer again, the same
key with another body 422. A record with a ttl (seconds) expires that long
after it was created, as if the provider had cleaned it up: the next PUT
finds it gone (404). Every record says how many times a record of its name
was created (incarnation).

PORT (default 8090) is where it listens; PRELOAD is a comma-separated list
of name=value records that exist before anyone asks, created by someone
else. Standard library only.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

lock = threading.Lock()
records = {}        # id -> record
incarnations = {}   # name -> records of that name ever created
keys = {}           # Idempotency-Key -> (body, status, reply)
next_id = [0]


def create(fields):
    next_id[0] += 1
    name = fields["name"]
    incarnations[name] = incarnations.get(name, 0) + 1
    rec = {"id": str(next_id[0]), "name": name, "type": fields.get("type", "A"),
           "value": fields.get("value", ""), "ttl": int(fields.get("ttl") or 0),
           "version": 1, "incarnation": incarnations[name], "created": time.time()}
    records[rec["id"]] = rec
    return rec


def expire():
    now = time.time()
    for rid in [r for r, rec in records.items() if rec["ttl"] and now - rec["created"] > rec["ttl"]]:
        del records[rid]


def public(rec):
    return {k: v for k, v in rec.items() if k != "created"}


def serve(method, path, query, body):
    """Returns (status, reply) for one request."""
    expire()
    parts = [p for p in path.split("/") if p]
    if parts[:1] != ["records"] or len(parts) > 2:
        return 404, {"error": "no such path: " + path}
    if len(parts) == 1:
        if method == "GET":
            name = query.get("name", [None])[0]
            return 200, [public(r) for r in records.values() if name in (None, r["name"])]
        if method != "POST":
            return 405, {"error": "GET or POST /records"}
        if not isinstance(body, dict) or not body.get("name"):
            return 400, {"error": "send {name, type, value}"}
        if any(r["name"] == body["name"] for r in records.values()):
            return 409, {"error": "name %s is taken" % body["name"]}
        return 201, public(create(body))
    rec = records.get(parts[1])
    if rec is None:
        return 404, {"error": "no record " + parts[1]}
    if method == "GET":
        return 200, public(rec)
    if method == "PUT":
        if not isinstance(body, dict):
            return 400, {"error": "send {name, type, value}"}
        changed = False
        for k in ("name", "type", "value"):
            if k in body and rec[k] != body[k]:
                rec[k] = body[k]
                changed = True
        if changed:
            rec["version"] += 1
        return 200, public(rec)
    if method == "DELETE":
        del records[parts[1]]
        return 204, None
    return 405, {"error": "GET, PUT or DELETE /records/{id}"}


class Handler(BaseHTTPRequestHandler):
    def handle_one(self, method):
        url = urlparse(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            self.reply(400, {"error": "the body is not JSON"})
            return
        key = self.headers.get("Idempotency-Key")
        with lock:
            if key and key in keys:
                seen, status, reply = keys[key]
                if seen != raw:
                    status, reply = 422, {"error": "this Idempotency-Key was used with another request"}
            else:
                status, reply = serve(method, url.path, parse_qs(url.query), body)
                if key:
                    keys[key] = (raw, status, reply)
        self.reply(status, reply)

    def reply(self, status, reply):
        data = b"" if reply is None else json.dumps(reply).encode()
        self.send_response(status)
        if reply is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.handle_one("GET")

    def do_POST(self):
        self.handle_one("POST")

    def do_PUT(self):
        self.handle_one("PUT")

    def do_DELETE(self):
        self.handle_one("DELETE")

    def log_message(self, fmt, *args):
        sys.stderr.write("dnsapi: %s %s\n" % (self.command, self.path))


def main():
    for item in filter(None, os.environ.get("PRELOAD", "").split(",")):
        name, _, value = item.partition("=")
        create({"name": name, "value": value})
    port = int(os.environ.get("PORT", "8090"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    sys.stderr.write("dnsapi: listening on 127.0.0.1:%d\n" % port)
    server.serve_forever()


if __name__ == "__main__":
    main()
