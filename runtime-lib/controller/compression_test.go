package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestSetCompression: a client of a config set without compression asks
// for no gzip, one set with it asks for gzip, and a config that disables it
// (a kubeconfig's disable-compression) keeps it off.
func TestSetCompression(t *testing.T) {
	got := make(chan string, 1)
	// Over TLS, as to an API server: client-go gives a plain-HTTP config
	// Go's default transport, which compresses whatever the config says.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name     string
		disabled bool // as a kubeconfig's disable-compression sets it
		on       bool
		want     string
	}{
		{"off", false, false, ""},
		{"on", false, true, "gzip"},
		{"on, the kubeconfig disabling it", true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &rest.Config{Host: srv.URL, DisableCompression: tc.disabled, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			SetCompression(cfg, tc.on)
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			if enc := <-got; enc != tc.want {
				t.Errorf("Accept-Encoding %q, want %q", enc, tc.want)
			}
		})
	}
}
