package controller

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestMetricsReviews: a request to the secure metrics endpoint is served
// only with a bearer token the API server authenticates and allows the
// request's verb on its path (HEAD as get); refusals are 401 and 403, an
// API server that cannot answer 500; answers are remembered.
func TestMetricsReviews(t *testing.T) {
	cs := fake.NewClientset()
	calls := 0
	failing := false
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if failing {
			return true, nil, errors.New("the API server is away")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if tr.Spec.Token == "scraper-token" || tr.Spec.Token == "other-token" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:" + tr.Spec.Token}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		nr := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:scraper-token" && nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
		return true, sar, nil
	})
	r := &metricsReviews{tokens: cs.AuthenticationV1().TokenReviews(), access: cs.AuthorizationV1().SubjectAccessReviews(), cache: map[[32]byte]review{}}
	ask := func(method, path, token string) (int, error) {
		req := httptest.NewRequest(method, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return r.allow(req)
	}
	for _, tc := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/metrics", "", http.StatusUnauthorized},
		{"GET", "/metrics", "stolen-token", http.StatusUnauthorized},
		{"GET", "/metrics", "other-token", http.StatusForbidden},
		{"GET", "/metrics", "scraper-token", http.StatusOK},
		{"HEAD", "/metrics", "scraper-token", http.StatusOK},
		{"POST", "/metrics", "scraper-token", http.StatusForbidden},
		{"GET", "/debug", "scraper-token", http.StatusForbidden},
	} {
		if got, err := ask(tc.method, tc.path, tc.token); got != tc.want || err != nil {
			t.Errorf("%s %s with token %q: %d (%v), want %d", tc.method, tc.path, tc.token, got, err, tc.want)
		}
	}
	before := calls
	if got, _ := ask("GET", "/metrics", "scraper-token"); got != http.StatusOK || calls != before {
		t.Errorf("an allowed token asked again: %d, %d more reviews; want 200 from memory", got, calls-before)
	}
	failing = true
	if got, err := ask("GET", "/metrics", "new-token"); got != http.StatusInternalServerError || err == nil {
		t.Errorf("with the API server away: %d (%v), want 500 and the error", got, err)
	}
}
