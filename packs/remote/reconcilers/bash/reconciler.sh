#!/usr/bin/env bash
# The WebApp reconciler in bash. socat accepts the connections and runs this
# script once per request (with --handle); jq turns the ReconcileRequest into
# the ReconcileResult. It answers exactly what the Go and Python ones do.
#
#   bash reconcilers/bash/reconciler.sh     # listens on 127.0.0.1:$PORT (8088)
#
# It needs socat and jq (Debian and Ubuntu: apt-get install socat jq).
set -euo pipefail
export LC_ALL=C # ${#body} counts bytes, as Content-Length does

if [[ ${1:-} != --handle ]]; then
	for tool in socat jq; do
		command -v "$tool" >/dev/null || { echo "reconciler.sh needs $tool: apt-get install $tool" >&2; exit 1; }
	done
	port=${PORT:-8088}
	echo "WebApp reconciler (bash) on http://127.0.0.1:$port/reconcile" >&2
	export WEBAPP_RECONCILER=$0
	exec socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" SYSTEM:'exec bash "$WEBAPP_RECONCILER" --handle'
fi

# One request on stdin, its reply on stdout.
reply() { # status, content type, body
	printf 'HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' "$1" "$2" "${#3}" "$3"
}

read -r method _ _ || exit 0 # a connection that sent nothing, such as a port check
length=0
while IFS= read -r line; do
	line=${line%$'\r'}
	[[ -z $line ]] && break
	if [[ ${line,,} =~ ^content-length:[[:space:]]*([0-9]+) ]]; then length=${BASH_REMATCH[1]}; fi
done
body=$(head -c "$length")
if [[ $method != POST ]]; then
	reply "405 Method Not Allowed" text/plain "send a ReconcileRequest with POST"
	exit
fi

# The reconciler itself: a Deployment, a Service while args.expose is true,
# and a status; done: true on a finalizing request. jq prints a line for the
# log, then the ReconcileResult.
program='
def result: {apiVersion: "inrun.dev/reconciler/v1alpha1", kind: "ReconcileResult"};
def reconcile:
	.object.metadata as $m | .args as $a | {app: $m.name} as $labels
	# What the cluster says of the Deployment returned last time.
	| ([.observed[] | select(.id == "deployment") | .status.readyReplicas // 0] | last // 0) as $ready
	| result + {
		resources: ([{
			id: "deployment", apiVersion: "apps/v1", kind: "Deployment",
			metadata: {name: $m.name, labels: $labels},
			spec: {
				replicas: $a.replicas,
				selector: {matchLabels: $labels},
				template: {
					metadata: {labels: $labels},
					spec: {containers: [{name: "web", image: $a.image, ports: [{name: "http", containerPort: 80}]}]}
				}
			}
		}] + if $a.expose then [{
			id: "service", apiVersion: "v1", kind: "Service",
			metadata: {name: $m.name, labels: $labels},
			spec: {selector: $labels, ports: [{name: "http", port: 80, targetPort: "http"}]}
		}] else [] end),
		status: ({phase: (if $ready >= $a.replicas then "Running" else "Pending" end), readyReplicas: $ready}
			+ if $a.expose then {url: "http://\($m.name).\($m.namespace).svc"} else {} end)
	};
if .apiVersion != "inrun.dev/reconciler/v1alpha1" or .kind != "ReconcileRequest" then
	error("want a ReconcileRequest of inrun.dev/reconciler/v1alpha1")
else
	(.object.metadata | "\(.namespace)/\(.name)") as $cr
	| if .finalizing then
		"finalizing \($cr): done", result + {done: true}
	else
		reconcile | "reconcile \($cr): \([.resources[].id] | join(", "))", .
	end
end'
if ! out=$(jq -rc "$program" <<<"$body" 2>&1); then
	reply "400 Bad Request" text/plain "not a ReconcileRequest this reconciler understands: $out"
	exit
fi
echo "${out%%$'\n'*}" >&2
reply "200 OK" application/json "${out#*$'\n'}"
