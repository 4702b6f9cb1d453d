package simulate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/sdk"
)

// Serve checks f against the Blueprint (CheckFile), then starts f's
// reconciler process, when it has one, and keeps it running for the cases
// RunCase runs until stop is called, instead of starting and stopping it
// around each case. stop returns an error when the process exited on its
// own before it. Serve and stop must not run while a case does.
func (s *Simulator) Serve(ctx context.Context, f *File) (stop func() error, err error) {
	if err := s.CheckFile(f); err != nil {
		return nil, err
	}
	if f.Reconciler == nil || f.process != nil {
		return func() error { return nil }, nil
	}
	p, err := s.start(ctx, f)
	if err != nil {
		return nil, err
	}
	f.process = p
	return func() error {
		f.process = nil
		return p.Stop()
	}, nil
}

// start starts f's reconciler process where the file, or else the
// Blueprint, says it serves.
func (s *Simulator) start(ctx context.Context, f *File) (*Process, error) {
	url, err := f.Reconciler.Endpoint(s.bp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	p, err := f.Reconciler.Start(ctx, StartOptions{URL: url, BaseDir: filepath.Dir(f.Path)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return p, nil
}

// endpoint returns the Blueprint case c runs (s.bp, or a copy that calls the
// case's reconciler), the recorded replies when the case has them, and what
// to call when the case ends.
func (s *Simulator) endpoint(ctx context.Context, f *File, c *Case) (*ir.Blueprint, *replyServer, func() error, error) {
	none := func() error { return nil }
	reply := c.Reply
	if reply == nil {
		reply = f.Reply
	}
	remote := s.bp.Reconcile != nil && s.bp.Reconcile.Remote != nil
	switch {
	case reply != nil && !remote:
		return nil, nil, nil, fmt.Errorf("reply: the Blueprint %s has no reconcile.url or reconcile.service, so nothing asks for a reply", s.bp.Name)
	case reply != nil:
		rs := newReplyServer(reply)
		return WithURL(s.bp, rs.srv.URL+"/reconcile"), rs, func() error { rs.srv.Close(); return nil }, nil
	case f.Reconciler == nil:
		return s.bp, nil, none, nil
	case f.process != nil:
		p := f.process
		if err := p.exitedBefore(); err != nil {
			f.process = nil // the cases after this one start their own
			return nil, nil, nil, err
		}
		return WithURL(s.bp, p.URL()), nil, func() error {
			err := p.exitedDuring()
			if err != nil {
				f.process = nil
			}
			return err
		}, nil
	}
	p, err := s.start(ctx, f)
	if err != nil {
		return nil, nil, nil, err
	}
	return WithURL(s.bp, p.URL()), nil, func() error {
		err := p.exitedDuring()
		if serr := p.Stop(); err == nil {
			err = serr
		}
		return err
	}, nil
}

// replyServer is a real HTTP server, in this process, that answers every
// request with a recorded reply: requests are read as strictly as a
// reconciler built on the sdk would, and finalizing requests get done: true
// unless a step said otherwise.
type replyServer struct {
	srv *httptest.Server

	mu           sync.Mutex
	reply, final []byte
}

func newReplyServer(reply map[string]any) *replyServer {
	rs := &replyServer{reply: replyBody(reply), final: replyBody(map[string]any{"done": true})}
	rs.srv = httptest.NewServer(http.HandlerFunc(rs.serve))
	return rs
}

// set replaces the reply to finalizing requests, or to the others.
func (rs *replyServer) set(reply map[string]any, finalizing bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if finalizing {
		rs.final = replyBody(reply)
	} else {
		rs.reply = replyBody(reply)
	}
}

func (rs *replyServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sdk.MaxRequestBytes))
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	req, err := sdk.DecodeRequest(body)
	if err != nil {
		http.Error(w, "not a valid "+sdk.KindRequest+": "+err.Error(), http.StatusBadRequest)
		return
	}
	rs.mu.Lock()
	reply := rs.reply
	if req.Finalizing {
		reply = rs.final
	}
	rs.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(reply)
}
