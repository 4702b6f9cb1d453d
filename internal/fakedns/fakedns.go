// Package fakedns is a small REST API of the most common shape, for tests
// of reconcile.api: POST /records assigns the id (201), GET, PUT and DELETE
// /records/{id} read, replace and remove one (404 for an unknown id), a
// taken name is 409, and GET /records?name=N finds records by name. It
// honours an Idempotency-Key header as the IETF draft says: the same key
// and body get the first answer again, the same key with another body 422.
//
// The pack's own DNS API (packs/remote/api) is the same service in Python.
package fakedns

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Record is one DNS record.
type Record struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
	// Version counts the changes of this record, from 1.
	Version int `json:"version"`
}

// Server is the API. The zero value is not usable: call New.
type Server struct {
	// HonourKeys makes the server honour Idempotency-Key. Set it before use.
	HonourKeys bool

	mu      sync.Mutex
	next    int
	records map[string]*Record
	keys    map[string]keyed
	creates int
}

type keyed struct {
	body   []byte
	status int
	reply  []byte
}

// New returns an empty API that honours idempotency keys.
func New() *Server {
	return &Server{HonourKeys: true, records: map[string]*Record{}, keys: map[string]keyed{}}
}

// Records returns a copy of every record, by id.
func (s *Server) Records() map[string]Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Record{}
	for id, r := range s.records {
		out[id] = *r
	}
	return out
}

// Creates counts the records POST created (idempotent replays excluded).
func (s *Server) Creates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates
}

// Add creates a record as someone else would, and returns its id.
func (s *Server) Add(name, typ, value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.add(Record{Name: name, Type: typ, Value: value}).ID
}

// Remove deletes a record behind the caller's back.
func (s *Server) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, id)
}

func (s *Server) add(r Record) *Record {
	s.next++
	s.creates++
	r.ID = strconv.Itoa(s.next)
	r.Version = 1
	s.records[r.ID] = &r
	return &r
}

// ServeHTTP implements the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	key := req.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != "" && s.HonourKeys {
		if k, ok := s.keys[key]; ok {
			if !bytes.Equal(k.body, body) {
				reply(w, http.StatusUnprocessableEntity, map[string]any{"error": "this Idempotency-Key was used with another request"})
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(k.status)
			_, _ = w.Write(k.reply)
			return
		}
		rec := &recorder{ResponseWriter: w}
		s.serve(rec, req, body)
		s.keys[key] = keyed{body: body, status: rec.status, reply: rec.buf.Bytes()}
		return
	}
	s.serve(w, req, body)
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request, body []byte) {
	rest := strings.TrimPrefix(req.URL.Path, "/records")
	id := strings.Trim(rest, "/")
	switch {
	case id == "" && req.Method == http.MethodPost:
		var r Record
		if err := json.Unmarshal(body, &r); err != nil || r.Name == "" {
			reply(w, http.StatusBadRequest, map[string]any{"error": "send {name, type, value}"})
			return
		}
		for _, e := range s.records {
			if e.Name == r.Name {
				reply(w, http.StatusConflict, map[string]any{"error": "name " + r.Name + " is taken"})
				return
			}
		}
		reply(w, http.StatusCreated, s.add(r))
	case id == "" && req.Method == http.MethodGet:
		out := []*Record{}
		for _, e := range s.records {
			if name := req.URL.Query().Get("name"); name == "" || e.Name == name {
				out = append(out, e)
			}
		}
		reply(w, http.StatusOK, out)
	case id != "":
		r, ok := s.records[id]
		if !ok {
			reply(w, http.StatusNotFound, map[string]any{"error": "no record " + id})
			return
		}
		switch req.Method {
		case http.MethodGet:
			reply(w, http.StatusOK, r)
		case http.MethodPut:
			var in Record
			if err := json.Unmarshal(body, &in); err != nil {
				reply(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
				return
			}
			if r.Name != in.Name || r.Type != in.Type || r.Value != in.Value {
				r.Name, r.Type, r.Value = in.Name, in.Type, in.Value
				r.Version++
			}
			reply(w, http.StatusOK, r)
		case http.MethodDelete:
			delete(s.records, id)
			w.WriteHeader(http.StatusNoContent)
		default:
			reply(w, http.StatusMethodNotAllowed, map[string]any{"error": "GET, PUT or DELETE"})
		}
	default:
		reply(w, http.StatusNotFound, map[string]any{"error": "no such path"})
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// recorder keeps a reply to answer a retry with.
type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.buf.Write(p)
	return r.ResponseWriter.Write(p)
}
