package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/inrun/inrun/sdk"
)

// scripted is the remote reconciler of the Widget Blueprint, scripted
// per custom resource: it answers well by default, and a row switches one
// Widget to a fault. It also stops listening altogether, for the row where
// the reconciler is down, and records every request it gets.
type scripted struct {
	addr string

	mu       sync.Mutex
	server   *http.Server
	behavior map[string]behavior // by namespace/name
	calls    map[string][]call
}

// behavior answers one request for one Widget. It writes the whole reply,
// so that it can reply what no SDK would: a cut-off body, a wrong version.
type behavior func(w http.ResponseWriter, r *http.Request, req *sdk.Request)

// call is one request the reconciler received.
type call struct {
	at time.Time
	// retryAfter is what the reply asked for, if anything.
	retryAfter time.Duration
}

// startReconciler listens on a free loopback port.
func startReconciler() (*scripted, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &scripted{addr: l.Addr().String(), behavior: map[string]behavior{}, calls: map[string][]call{}}
	r.serve(l)
	return r, nil
}

// URL is where the runtime calls it.
func (r *scripted) URL() string { return "http://" + r.addr + "/reconcile" }

func (r *scripted) serve(l net.Listener) {
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	r.mu.Lock()
	r.server = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// down closes the listener and every connection: calls are refused.
func (r *scripted) down() error {
	r.mu.Lock()
	srv := r.server
	r.server = nil
	r.mu.Unlock()
	if srv == nil {
		return errors.New("the reconciler is down already")
	}
	return srv.Close()
}

// up listens again at the same address.
func (r *scripted) up() error {
	var l net.Listener
	var err error
	// The port was ours a moment ago; give the kernel a moment if needed.
	for i := 0; i < 50; i++ {
		if l, err = net.Listen("tcp", r.addr); err == nil {
			r.serve(l)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("listening at %s again: %w", r.addr, err)
}

func (r *scripted) close() {
	r.mu.Lock()
	srv := r.server
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// set makes the Widget key answer with b; nil restores the good answer.
func (r *scripted) set(key string, b behavior) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b == nil {
		delete(r.behavior, key)
		return
	}
	r.behavior[key] = b
}

// callsBetween counts the requests for key received in [from, to).
func (r *scripted) callsBetween(key string, from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls[key] {
		if !c.at.Before(from) && c.at.Before(to) {
			n++
		}
	}
	return n
}

// early counts the requests for key that came sooner after a reply with
// Retry-After than that reply asked, and the shortest such gap.
func (r *scripted) early(key string) (n int, shortest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls[key]
	for i := 1; i < len(calls); i++ {
		prev := calls[i-1]
		if gap := calls[i].at.Sub(prev.at); prev.retryAfter > 0 && gap < prev.retryAfter {
			if n == 0 || gap < shortest {
				shortest = gap
			}
			n++
		}
	}
	return n, shortest
}

func (r *scripted) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := sdk.DecodeRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res := sdk.Resource{Object: req.Object}
	key := res.Namespace() + "/" + res.Name()
	r.mu.Lock()
	b := r.behavior[key]
	r.calls[key] = append(r.calls[key], call{at: time.Now()})
	i := len(r.calls[key]) - 1
	r.mu.Unlock()
	if b == nil {
		b = answer(good)
	}
	rw := &recordingWriter{ResponseWriter: w}
	b(rw, hr, req)
	if rw.retryAfter > 0 {
		r.mu.Lock()
		r.calls[key][i].retryAfter = rw.retryAfter
		r.mu.Unlock()
	}
}

// recordingWriter notes the Retry-After a behaviour answers with.
type recordingWriter struct {
	http.ResponseWriter
	retryAfter time.Duration
}

func (w *recordingWriter) WriteHeader(code int) {
	if s := w.Header().Get("Retry-After"); s != "" {
		var secs int
		if _, err := fmt.Sscan(s, &secs); err == nil {
			w.retryAfter = time.Duration(secs) * time.Second
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets a behaviour reach the connection (http.ResponseController).
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// good is the Result a well-behaved reconciler returns for req: two
// ConfigMaps made from the args and a status. Finalizing, it is done.
func good(req *sdk.Request) map[string]any {
	if req.Finalizing {
		return map[string]any{"apiVersion": sdk.APIVersion, "kind": sdk.KindResult, "done": true}
	}
	name := sdk.Resource{Object: req.Object}.Name()
	size, _ := req.Args["size"].(string)
	cm := func(id string) map[string]any {
		return map[string]any{
			"id": id, "apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name + "-" + id},
			"data":     map[string]any{"size": size, "from": "reconciler"},
		}
	}
	return map[string]any{
		"apiVersion": sdk.APIVersion, "kind": sdk.KindResult,
		"status":    map[string]any{"phase": "Running", "size": size},
		"resources": []any{cm("a"), cm("b")},
	}
}

// answer replies 200 with what make returns for the request, as JSON.
func answer(make func(*sdk.Request) map[string]any) behavior {
	return func(w http.ResponseWriter, _ *http.Request, req *sdk.Request) {
		raw, err := json.Marshal(make(req))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	}
}

// raw replies with code and body as they are.
func raw(code int, body string, header ...string) behavior {
	return func(w http.ResponseWriter, _ *http.Request, _ *sdk.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}
