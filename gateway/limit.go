package gateway

import (
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter is a token bucket per token id: a flood from one token is
// refused (429, with the wait in Retry-After) while others go on.
type limiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newLimiter(limit rate.Limit, burst int) *limiter {
	return &limiter{limit: limit, burst: burst, buckets: map[string]*rate.Limiter{}}
}

// allow takes one request from id's bucket, or says how long to wait.
func (l *limiter) allow(id string, now time.Time) *Problem {
	if l.limit == rate.Inf {
		return nil
	}
	l.mu.Lock()
	b, ok := l.buckets[id]
	if !ok {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[id] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		p := problem(http.StatusTooManyRequests, CodeRateLimited, "wait as long as Retry-After says, then send it again",
			"too many requests from this token: at most %g a second, %d at once", float64(l.limit), l.burst)
		p.RetryAfter = d
		return p
	}
	return nil
}
