package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/gateway"
)

// EnvRequests sets how many requests TestConcurrentRetries sends; make
// gateway-idempotency sends 1,000.
const EnvRequests = "INRUN_GATEWAY_REQUESTS"

// TestConcurrentRetries sends many requests at once under a few
// idempotency keys, ten per key, to the target whose names the gateway
// generates: the case where a retry without a key would make a second App.
// A third of the attempts drop their connection mid-request and retry; a
// retry that meets its first request in flight (409) waits and retries.
// Every key must end with exactly one App, and every request of a key must
// be answered with that App's name.
func TestConcurrentRetries(t *testing.T) {
	n := 100
	if v := os.Getenv(EnvRequests); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("%s=%s: want a number of at least 10", EnvRequests, v)
		}
	}
	e := newEnv(t, func(o *gateway.Options) { o.RateLimit = -1 })
	tok := e.token(t, "retries", "deploy")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	keys := n / 10

	type answer struct {
		key      int
		status   int
		name     string
		replay   bool
		location string
	}
	answers := make(chan answer, n)
	var dropped, conflicts, attempts sync.Map
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := i % keys
			body, _ := json.Marshal(map[string]any{"repository": fmt.Sprintf("retry-%s/app-%d", run, key)})
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for try := 0; try < 200; try++ {
				attempts.Store(fmt.Sprint(i, "/", try), true)
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					// Drop the connection part way through.
					time.AfterFunc(time.Duration(rng.IntN(20))*time.Millisecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/targets/gen/intents", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("%q", run+"-"+strconv.Itoa(key)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					cancel()
					dropped.Store(fmt.Sprint(i, "/", try), true)
					continue
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				if err != nil {
					dropped.Store(fmt.Sprint(i, "/", try), true)
					continue
				}
				if resp.StatusCode == http.StatusConflict {
					conflicts.Store(fmt.Sprint(i, "/", try), true)
					time.Sleep(time.Duration(20+rng.IntN(30)) * time.Millisecond)
					continue
				}
				var v map[string]any
				_ = json.Unmarshal(data, &v)
				name, _ := v["name"].(string)
				answers <- answer{key: key, status: resp.StatusCode, name: name, replay: resp.Header.Get("Idempotent-Replayed") == "true", location: resp.Header.Get("Location")}
				return
			}
			answers <- answer{key: key, status: -1}
		}(i)
	}
	wg.Wait()
	close(answers)

	names := map[int]map[string]int{}
	replays := 0
	for a := range answers {
		if a.status != http.StatusCreated {
			t.Errorf("key %d: a request ended with %d", a.key, a.status)
			continue
		}
		if names[a.key] == nil {
			names[a.key] = map[string]int{}
		}
		names[a.key][a.name]++
		// A replayed create says where the intent is, as the first answer did.
		if loc, _, _ := strings.Cut(a.location, "?"); !strings.HasSuffix(loc, "/intents/"+a.name) {
			t.Errorf("key %d (replayed %v): Location %q, want the intent %s", a.key, a.replay, a.location, a.name)
		}
		if a.replay {
			replays++
		}
	}
	for k := range keys {
		if len(names[k]) != 1 {
			t.Errorf("key %d was answered with %d names: %v", k, len(names[k]), names[k])
		}
	}
	count := func(m *sync.Map) int {
		c := 0
		m.Range(func(any, any) bool { c++; return true })
		return c
	}
	t.Logf("%d requests, %d keys: %d attempts, %d dropped, %d answered 409 in flight, %d replayed", n, keys, count(&attempts), count(&dropped), count(&conflicts), replays)

	// The cluster holds one App per key.
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("example.inrun.dev/v1")
	l.SetKind("AppList")
	if err := e.c.List(context.Background(), l, client.InNamespace("apps-staging"), client.MatchingLabels{gateway.LabelTarget: "gen"}); err != nil {
		t.Fatal(err)
	}
	perKey := map[string]int{}
	for _, it := range l.Items {
		repo, _, _ := unstructured.NestedString(it.Object, "spec", "repository")
		if len(repo) > len("retry-"+run) && repo[:len("retry-"+run)] == "retry-"+run {
			perKey[repo]++
			it := it
			t.Cleanup(func() { _ = e.c.Delete(context.Background(), &it) })
		}
	}
	if len(perKey) != keys {
		t.Errorf("%d keys made Apps for %d repositories", keys, len(perKey))
	}
	for repo, c := range perKey {
		if c != 1 {
			t.Errorf("%d Apps for %s: retries made duplicates", c, repo)
		}
	}

	// The same key with another payload is refused.
	r := e.do(t, "POST", "/v1/targets/gen/intents", tok, map[string]any{"repository": "retry-" + run + "/other"}, "Idempotency-Key", fmt.Sprintf("%q", run+"-0"))
	if r.status != http.StatusUnprocessableEntity || r.body["code"] != "idempotency-key-reused" {
		t.Errorf("another payload under a used key: %d %s", r.status, r.raw)
	}
}
