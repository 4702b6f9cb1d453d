package play

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
)

// HandlerPattern is where inrun serve mounts the play endpoint beside the
// gateway's API (gateway.Server.Handle).
const HandlerPattern = "POST /v1/targets/{target}/play"

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Blueprints are the served targets' Blueprints. A remote reconciler is
	// called where the Blueprint says: the one the runtime calls. Required.
	Blueprints []*ir.Blueprint
	// Authenticate turns a request into its caller, as the gateway's API
	// does (gateway.Server.Authenticate). Required.
	Authenticate func(*http.Request) (*gateway.Caller, *gateway.Problem)
	// MaxBodyBytes bounds the draft intent. Default
	// gateway.DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Timeout bounds one play. Default 30 seconds.
	Timeout time.Duration
}

// Answer is the body of a play over HTTP.
type Answer struct {
	// Accepted is true when the gateway would accept the intent.
	Accepted bool `json:"accepted"`
	// Stages are the stages played, each with what it printed.
	Stages []Stage `json:"stages"`
	// Problem is the refusal, as the gateway would answer it, when a
	// stage refused the intent.
	Problem *gateway.Problem `json:"problem,omitempty"`
}

// NewHandler serves HandlerPattern: the body is a draft intent, played
// with the caller's own scopes through every stage, as inrun serve play
// does; the answer is an Answer, 200 whether or not the intent would be
// accepted. ?name= names the intent as a PUT would.
//
// A play never writes to the cluster: the handler has no client, and the
// reconcile is simulate's, in memory.
func NewHandler(opts HandlerOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = gateway.DefaultMaxBodyBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	bps := map[string]*ir.Blueprint{}
	for _, bp := range opts.Blueprints {
		if bp.Serve != nil {
			bps[bp.Serve.Target] = bp
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, prob := opts.Authenticate(r)
		if prob != nil {
			prob.Write(w)
			return
		}
		bp := bps[r.PathValue("target")]
		if bp == nil {
			refuse(w, http.StatusNotFound, gateway.CodeUnknownTarget, "GET /v1/targets lists the targets your token may use", "no target "+r.PathValue("target"))
			return
		}
		t, err := gateway.NewTarget(bp)
		if err != nil {
			refuse(w, http.StatusInternalServerError, gateway.CodeInternal, "", err.Error())
			return
		}
		// A caller plays only a target its token may use at all.
		if len(t.Info(caller).Allowed) == 0 {
			gateway.Authorize(caller, t, ir.VerbGet, "").Write(w)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, opts.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				refuse(w, http.StatusRequestEntityTooLarge, gateway.CodeTooLarge, "send only the intent's fields", "the draft intent is too large")
				return
			}
			refuse(w, http.StatusBadRequest, gateway.CodeMalformed, "send the body again", "the body could not be read")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), opts.Timeout)
		defer cancel()
		stages, refused, err := Stages(ctx, Options{Blueprint: bp, Intent: body, Scopes: caller.Scopes, Name: r.URL.Query().Get("name")})
		if err != nil {
			refuse(w, http.StatusBadGateway, gateway.CodeUnavailable, "play again; inrun serve play with the Blueprint shows the same stages locally", "the play could not finish: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_ = json.NewEncoder(w).Encode(Answer{Accepted: refused == nil, Stages: stages, Problem: refused})
	})
}

func refuse(w http.ResponseWriter, status int, code, fix, detail string) {
	(&gateway.Problem{Status: status, Title: http.StatusText(status), Code: code, Detail: detail, Fix: fix}).Write(w)
}
