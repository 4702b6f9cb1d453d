// Command reconciler is the WebApp reconciler in Go, with the standard
// library only, so that it runs from a copied pack with no go.mod:
//
//	go run ./reconcilers/go/main.go     # listens on 127.0.0.1:$PORT (8088)
//
// Inrun POSTs a ReconcileRequest (the WebApp, the Blueprint's args, the
// children it observed, and whether the WebApp is being deleted) and applies
// the ReconcileResult this answers: a Deployment, a Service while args.expose
// is true, and a status. The Python and bash reconcilers answer exactly the
// same.
//
// A Go reconciler inside a module that requires github.com/inrun/inrun can
// use its sdk package instead of the types below: sdk.Handler reads the
// request strictly and checks the Result before sending it.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
)

const apiVersion = "inrun.dev/reconciler/v1alpha1"

// request is the part of a ReconcileRequest this reconciler reads.
type request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Object     struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	} `json:"object"`
	Args struct {
		Image    string `json:"image"`
		Replicas int64  `json:"replicas"`
		Expose   bool   `json:"expose"`
	} `json:"args"`
	Observed []struct {
		ID     string `json:"id"`
		Status struct {
			ReadyReplicas int64 `json:"readyReplicas"`
		} `json:"status"`
	} `json:"observed"`
	Finalizing bool `json:"finalizing"`
}

// result is a ReconcileResult.
type result struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Status     map[string]any   `json:"status,omitempty"`
	Resources  []map[string]any `json:"resources,omitempty"`
	Done       bool             `json:"done,omitempty"`
}

type obj = map[string]any

// reconcile answers one request.
func reconcile(req *request) *result {
	name, namespace := req.Object.Metadata.Name, req.Object.Metadata.Namespace
	res := &result{APIVersion: apiVersion, Kind: "ReconcileResult"}
	if req.Finalizing {
		// Nothing outside the cluster to clean up: the children are Inrun's.
		log.Printf("finalizing %s/%s: done", namespace, name)
		res.Done = true
		return res
	}

	labels := obj{"app": name}
	res.Resources = append(res.Resources, obj{
		"id":         "deployment",
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   obj{"name": name, "labels": labels},
		"spec": obj{
			"replicas": req.Args.Replicas,
			"selector": obj{"matchLabels": labels},
			"template": obj{
				"metadata": obj{"labels": labels},
				"spec": obj{"containers": []obj{{
					"name":  "web",
					"image": req.Args.Image,
					"ports": []obj{{"name": "http", "containerPort": 80}},
				}}},
			},
		},
	})

	// What the cluster says of the Deployment returned last time.
	var ready int64
	for _, o := range req.Observed {
		if o.ID == "deployment" {
			ready = o.Status.ReadyReplicas
		}
	}
	phase := "Pending"
	if ready >= req.Args.Replicas {
		phase = "Running"
	}
	res.Status = obj{"phase": phase, "readyReplicas": ready}

	if req.Args.Expose {
		res.Resources = append(res.Resources, obj{
			"id":         "service",
			"apiVersion": "v1",
			"kind":       "Service",
			"metadata":   obj{"name": name, "labels": labels},
			"spec": obj{
				"selector": labels,
				"ports":    []obj{{"name": "http", "port": 80, "targetPort": "http"}},
			},
		})
		res.Status["url"] = fmt.Sprintf("http://%s.%s.svc", name, namespace)
	}

	ids := make([]string, len(res.Resources))
	for i, r := range res.Resources {
		ids[i] = r["id"].(string)
	}
	log.Printf("reconcile %s/%s: %s", namespace, name, strings.Join(ids, ", "))
	return res
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "send a ReconcileRequest with POST", http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20)).Decode(&req); err != nil {
		http.Error(w, "not a ReconcileRequest this reconciler understands: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.APIVersion != apiVersion || req.Kind != "ReconcileRequest" {
		http.Error(w, "want a ReconcileRequest of "+apiVersion, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(reconcile(&req)); err != nil {
		log.Printf("writing the reply: %v", err)
	}
}

func main() {
	log.SetFlags(0)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8088"
	}
	addr := "127.0.0.1:" + port
	http.HandleFunc("/", serve)
	log.Printf("WebApp reconciler (Go) on http://%s/reconcile", addr)
	log.Fatal(http.ListenAndServe(addr, nil))
}
