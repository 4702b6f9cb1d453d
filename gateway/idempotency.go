package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Records keep what each Idempotency-Key was used for and what it was
// answered, as Leases in the gateway's namespace: a Lease's create is
// atomic, so of two replicas (or two retries in one) only one holds a
// key; its holder and renew time say a request is in flight, and a holder
// that died is taken over once its lease runs out; and it survives the
// gateway's restarts. A map of the keys in flight in this process answers
// retries that arrive here without a call to the API server.
//
// A record holds the fingerprint of the request (method, target, path,
// query and the intent as validated), the name chosen for the intent
// before anything is written (so that a generated name is the same for
// every retry, and after a takeover), and, once done, the answer.
type Records struct {
	Client    client.Client
	Namespace string
	// Holder identifies this replica in the Leases it holds.
	Holder string
	// TTL is how long a key's answer is kept. Default 24h.
	TTL time.Duration
	// Lease is how long a request may stay in flight before another
	// replica may take its key over. Default 60s.
	Lease time.Duration
	Now   func() time.Time

	mu       sync.Mutex
	inFlight map[string]bool
}

// Annotations of a record.
const (
	LabelRecord         = "gateway.inrun.dev/idempotency"
	annFingerprint      = "gateway.inrun.dev/fingerprint"
	annName             = "gateway.inrun.dev/name"
	annStatus           = "gateway.inrun.dev/status"
	annBody             = "gateway.inrun.dev/body"
	annCreated          = "gateway.inrun.dev/created"
	maxKeyLength        = 255
	maxRecordedBodySize = 128 << 10
)

// Record is a held key: the request it is for, and where to put the
// answer.
type Record struct {
	r    *Records
	name string
	// Name is the intent's name the first request chose.
	Name string
	// Takeover is set when the key was held by a request that stopped
	// before it answered: what it did may be done already.
	Takeover bool
	lease    *coordinationv1.Lease
	// stopRenew stops the renewing of the held Lease and waits for it.
	stopRenew func()
}

// Replay is an earlier answer to the same key and payload.
type Replay struct {
	Status int
	Body   []byte
}

func (r *Records) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// ParseKey reads an Idempotency-Key header: a structured-field string, as
// the draft has it ("8e03978e..."), or the same without quotes.
func ParseKey(h string) (string, *Problem) {
	const fix = `send a unique value per operation, such as Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`
	k := strings.TrimSpace(h)
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if k == "" || len(k) > maxKeyLength {
		return "", problem(http.StatusBadRequest, CodeIdempotencyKey, fix, "the Idempotency-Key must be 1 to %d characters", maxKeyLength)
	}
	for _, c := range k {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", problem(http.StatusBadRequest, CodeIdempotencyKey, fix, "the Idempotency-Key holds a character a structured-field string cannot")
		}
	}
	return k, nil
}

// Fingerprint identifies a request's payload for its key.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Begin claims key for the caller's request with the given fingerprint.
// It returns the held Record (with name when this is the first request;
// the first request's name after a takeover), or a Replay of the first
// answer, or a Problem: 409 while the first is in flight, 422 for another
// payload under the same key.
func (r *Records) Begin(ctx context.Context, caller, key, fingerprint, name string) (*Record, *Replay, *Problem) {
	rec := &Record{r: r, name: "idem-" + Fingerprint(caller, key)[:40], Name: name}
	r.mu.Lock()
	if r.inFlight == nil {
		r.inFlight = map[string]bool{}
	}
	if r.inFlight[rec.name] {
		r.mu.Unlock()
		return nil, nil, inFlight()
	}
	r.inFlight[rec.name] = true
	r.mu.Unlock()
	release := true
	defer func() {
		if release {
			r.forget(rec.name)
		}
	}()

	now := r.now()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: rec.name, Namespace: r.Namespace, Labels: map[string]string{LabelRecord: "true"},
			Annotations: map[string]string{annFingerprint: fingerprint, annName: name, annCreated: now.UTC().Format(time.RFC3339)}},
		Spec: r.holding(now),
	}
	for attempt := 0; attempt < 5; attempt++ {
		err := r.Client.Create(ctx, lease)
		if err == nil {
			rec.lease = lease
			release = false
			rec.renew(ctx)
			return rec, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, nil, unavailable(err)
		}
		var cur coordinationv1.Lease
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(lease), &cur); err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted meanwhile: create again
			}
			return nil, nil, unavailable(err)
		}
		created, _ := time.Parse(time.RFC3339, cur.Annotations[annCreated])
		expired := now.Sub(created) > r.ttl()
		if !expired && cur.Annotations[annFingerprint] != fingerprint {
			return nil, nil, problem(http.StatusUnprocessableEntity, CodeKeyReused, "use a new Idempotency-Key for a new request",
				"this Idempotency-Key was used for another request; it may be used again only for the same one")
		}
		if status := cur.Annotations[annStatus]; status != "" && !expired {
			code, _ := strconv.Atoi(status)
			return nil, &Replay{Status: code, Body: []byte(cur.Annotations[annBody])}, nil
		}
		if !expired && r.held(&cur, now) {
			return nil, nil, inFlight()
		}
		// Expired, or in flight at a holder that stopped renewing: take it
		// over, keeping the name it chose unless the key expired.
		cur.Spec = r.holding(now)
		if expired {
			cur.Annotations = lease.Annotations
		} else if n := cur.Annotations[annName]; n != "" {
			rec.Name = n
		}
		if err := r.Client.Update(ctx, &cur); err != nil {
			if apierrors.IsConflict(err) {
				return nil, nil, inFlight()
			}
			return nil, nil, unavailable(err)
		}
		rec.lease = &cur
		rec.Takeover = !expired
		release = false
		rec.renew(ctx)
		return rec, nil, nil
	}
	return nil, nil, inFlight()
}

func (r *Records) holding(now time.Time) coordinationv1.LeaseSpec {
	t := metav1.NewMicroTime(now)
	return coordinationv1.LeaseSpec{HolderIdentity: ptr.To(r.Holder), LeaseDurationSeconds: ptr.To(int32(r.lease() / time.Second)), AcquireTime: &t, RenewTime: &t}
}

// held reports whether a record's holder still holds it.
func (r *Records) held(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return false
	}
	d := r.lease()
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Before(l.Spec.RenewTime.Add(d))
}

func (r *Records) ttl() time.Duration {
	if r.TTL > 0 {
		return r.TTL
	}
	return 24 * time.Hour
}

func (r *Records) lease() time.Duration {
	if r.Lease > 0 {
		return r.Lease
	}
	return time.Minute
}

func (r *Records) forget(name string) {
	r.mu.Lock()
	delete(r.inFlight, name)
	r.mu.Unlock()
}

// Finish records the answer, so that a retry gets it back, and releases
// the key. Answers a retry should not get (a server error, a conflict,
// too many requests) are not kept: the record goes, and a retry runs the
// request again.
func (rec *Record) Finish(ctx context.Context, status int, body []byte) {
	defer rec.r.forget(rec.name)
	rec.stopRenew()
	// The answer is recorded even when the caller has gone: a retry of a
	// dropped connection must find it.
	ctx = context.WithoutCancel(ctx)
	if status >= 500 || status == http.StatusConflict || status == http.StatusTooManyRequests || len(body) > maxRecordedBodySize {
		_ = rec.r.Client.Delete(ctx, rec.lease)
		return
	}
	for range 5 {
		l := rec.lease
		l.Annotations[annStatus] = strconv.Itoa(status)
		l.Annotations[annBody] = string(body)
		l.Spec.HolderIdentity = nil
		err := rec.r.Client.Update(ctx, l)
		if !apierrors.IsConflict(err) {
			return
		}
		var cur coordinationv1.Lease
		if rec.r.Client.Get(ctx, client.ObjectKeyFromObject(l), &cur) != nil {
			return
		}
		if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != rec.r.Holder {
			return // taken over: the new holder answers
		}
		rec.lease = &cur
	}
}

// Sweep deletes the records whose answers have expired and that no
// request holds: a key is reused after its TTL anyway, and without the
// sweep a key never sent again would keep its Lease for ever. A record
// changed meanwhile (taken over, answered) is left: the delete is
// conditional on the version read.
func (r *Records) Sweep(ctx context.Context) (int, error) {
	var list coordinationv1.LeaseList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels{LabelRecord: "true"}); err != nil {
		return 0, err
	}
	now, deleted := r.now(), 0
	for i := range list.Items {
		l := &list.Items[i]
		created, err := time.Parse(time.RFC3339, l.Annotations[annCreated])
		if err == nil && now.Sub(created) <= r.ttl() || r.held(l, now) {
			continue
		}
		err = r.Client.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		switch {
		case err == nil:
			deleted++
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		default:
			return deleted, err
		}
	}
	return deleted, nil
}

// sweepEvery runs Sweep every interval until ctx ends.
func (r *Records) sweepEvery(ctx context.Context, interval time.Duration, log func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			log(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renew keeps the held Lease's renew time fresh while the request runs,
// every third of the lease: a request that waits longer than a lease
// (?wait=) is not taken over by another replica. It stops at Finish, or
// when the Lease is no longer this replica's.
func (rec *Record) renew(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	rec.stopRenew = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(rec.r.lease() / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			l := rec.lease.DeepCopy()
			renewed := metav1.NewMicroTime(rec.r.now())
			l.Spec.RenewTime = &renewed
			err := rec.r.Client.Update(ctx, l)
			switch {
			case err == nil:
				rec.lease = l
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				return // no longer ours as it was: the new holder answers
			}
		}
	}()
}

func inFlight() *Problem {
	p := problem(http.StatusConflict, CodeInFlight, "retry after a moment with the same key: you will get the first request's answer",
		"a request with this Idempotency-Key is still in flight")
	p.RetryAfter = time.Second
	return p
}

func unavailable(err error) *Problem {
	p := problem(http.StatusServiceUnavailable, CodeUnavailable, "try again shortly", "the cluster did not answer")
	_ = err
	p.RetryAfter = time.Second
	return p
}
