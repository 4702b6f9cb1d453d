package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/inrun/inrun/gateway"
)

// TestRotate: a rotated token gets the lifetime its predecessor was made
// with, however much the grace shortened the predecessor; a token is
// rotated once, and an expired one not at all.
func TestRotate(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	// The API server stores a Secret's stringData as data; the fake
	// client does not.
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sec, ok := obj.(*corev1.Secret); ok {
				sec.Data = map[string][]byte{}
				for k, v := range sec.StringData {
					sec.Data[k] = []byte(v)
				}
				sec.StringData = nil
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	tokens := &gateway.Tokens{Client: c, Namespace: "inrun-gateway", Now: func() time.Time { return now }}

	_, first, err := tokens.Create(ctx, gateway.CreateOptions{Name: "ci", Scopes: []string{"deploy"}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, second, err := tokens.Rotate(ctx, first.ID, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if second.Expires == nil || second.Expires.Sub(now) != time.Hour {
		t.Errorf("the rotated token expires %v; want an hour after now, the lifetime it was made with", second.Expires)
	}
	if _, _, err := tokens.Rotate(ctx, first.ID, time.Hour); err == nil || !strings.Contains(err.Error(), "was rotated already, into "+second.ID) {
		t.Errorf("a second rotation of %s: %v; want it refused, naming %s", first.ID, err, second.ID)
	}

	// The successor, rotated in its turn after the first's grace is over,
	// still lives an hour.
	now = now.Add(10 * time.Minute)
	_, third, err := tokens.Rotate(ctx, second.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if third.Expires == nil || third.Expires.Sub(now) != time.Hour {
		t.Errorf("the third token expires %v; want an hour after now", third.Expires)
	}

	now = now.Add(2 * time.Hour)
	if _, _, err := tokens.Rotate(ctx, third.ID, 0); err == nil || !strings.Contains(err.Error(), "expired at") {
		t.Errorf("rotating an expired token: %v; want it refused", err)
	}
	if _, _, err := tokens.Create(ctx, gateway.CreateOptions{Name: "ci", Scopes: []string{"deploy"}, TTL: -5 * time.Minute}); err == nil {
		t.Error("a negative --ttl made a token")
	}

	_, forever, err := tokens.Create(ctx, gateway.CreateOptions{Name: "bot", Scopes: []string{"deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	_, next, err := tokens.Rotate(ctx, forever.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if next.Expires != nil {
		t.Errorf("a token that never expired was rotated into one that expires %v", next.Expires)
	}
}
