package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Func is a reconciler written in Go: it reads one request and answers
// what should exist. A nil Result with a nil error means there is nothing
// to do. An error means the reconcile failed and is retried; the runtime
// shows its message in the custom resource's conditions and Events.
type Func func(ctx context.Context, req *Request) (*Result, error)

// MaxRequestBytes bounds the body Handler reads: the custom resource and
// its observed children.
const MaxRequestBytes = 32 << 20

// Handler serves fn as a remote reconciler. It accepts POST only, decodes
// the body with DecodeRequest (a bad request is a 400 listing every
// problem), calls fn, fills in the Result's apiVersion and kind when they
// are empty, checks it with Result.Validate, and that it has a step only in
// reply to a request with one, and writes it as JSON. An error from fn, a
// panic in fn, or an invalid Result is a 500 whose body is the message,
// which the runtime shows to people as it is.
func Handler(fn Func) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			plain(w, http.StatusMethodNotAllowed, "send a ReconcileRequest with POST")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				plain(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is larger than %d bytes", MaxRequestBytes))
				return
			}
			plain(w, http.StatusBadRequest, "reading the request: "+err.Error())
			return
		}
		req, err := DecodeRequest(body)
		if err != nil {
			plain(w, http.StatusBadRequest, "not a valid "+KindRequest+": "+err.Error())
			return
		}
		res, err := call(r.Context(), fn, req)
		if err != nil {
			plain(w, http.StatusInternalServerError, err.Error())
			return
		}
		if res == nil {
			res = &Result{}
		}
		if res.APIVersion == "" {
			res.APIVersion = APIVersion
		}
		if res.Kind == "" {
			res.Kind = KindResult
		}
		if err := res.validateFor(req); err != nil {
			plain(w, http.StatusInternalServerError, "the reconciler returned an invalid Result: "+err.Error())
			return
		}
		out, err := json.Marshal(res)
		if err != nil {
			plain(w, http.StatusInternalServerError, "encoding the Result: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

// call runs fn and turns a panic into an error, so that the runtime gets
// a 500 with a message instead of a dropped connection it would retry.
func call(ctx context.Context, fn Func, req *Request) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			res, err = nil, fmt.Errorf("the reconciler panicked: %v", p)
		}
	}()
	if fn == nil {
		return nil, errors.New("sdk.Handler was given a nil Func")
	}
	return fn(ctx, req)
}

func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}
