package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// gatewayRun is the intent gateway a file's gateway block runs for the
// run: in this process, on a loopback port, with tokens made for the run.
type gatewayRun struct {
	url    string
	target *gateway.Target
	// tokens are the run's tokens by the name the file gives them;
	// callers are the names they were made with (unique to the run), by
	// which the intents they made are found.
	tokens  map[string]string
	callers []string
	ids     []string
	// created are the namespaces the run created, deleted after it.
	created []string
	c       client.Client
	stop    func()
	audit   bytes.Buffer
}

// startGateway runs the gateway for bp on cfg, makes the block's tokens,
// and creates the namespaces the target puts intents in when they are
// missing.
func startGateway(ctx context.Context, cfg *rest.Config, bp *ir.Blueprint, g *Gateway) (*gatewayRun, error) {
	if bp.Serve == nil {
		return nil, fmt.Errorf("the file has a gateway block, but Blueprint %s has no serve section", bp.Name)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		return nil, err
	}
	gr := &gatewayRun{tokens: map[string]string{}, c: c}
	namespaces := []string{gateway.DefaultNamespace}
	t, err := gateway.NewTarget(bp)
	if err != nil {
		return nil, err
	}
	gr.target = t
	if bp.Resource.Namespaced {
		if bp.Serve.Namespace.From == "" {
			namespaces = append(namespaces, bp.Serve.Namespace.Name)
		}
		for _, env := range bp.Serve.Environments() {
			namespaces = append(namespaces, bp.Serve.Namespace.Map[env])
		}
	}
	for _, ns := range namespaces {
		err := createNamespace(ctx, c, ns)
		switch {
		case err == nil:
			gr.created = append(gr.created, ns)
		case !apierrors.IsAlreadyExists(err):
			gr.cleanup()
			return nil, fmt.Errorf("creating namespace %s for the gateway: %w", ns, err)
		}
	}
	tokens := &gateway.Tokens{Client: c, Namespace: gateway.DefaultNamespace}
	run := strings.ToLower(fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff))
	names := make([]string, 0, len(g.Tokens))
	for name := range g.Tokens {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		caller := "e2e-" + name + "-" + run
		tok, info, err := tokens.Create(ctx, gateway.CreateOptions{Name: caller, Scopes: g.Tokens[name]})
		if err != nil {
			gr.cleanup()
			return nil, fmt.Errorf("gateway.tokens.%s: %w", name, err)
		}
		gr.tokens[name], gr.callers, gr.ids = tok, append(gr.callers, caller), append(gr.ids, info.ID)
	}
	s, err := gateway.New(gateway.Options{Blueprints: []*ir.Blueprint{bp}, Client: c, Audit: &gr.audit, RateLimit: -1})
	if err != nil {
		gr.cleanup()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gr.cleanup()
		return nil, err
	}
	gr.url = "http://" + ln.Addr().String()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx, ln) }()
	gr.stop = func() { cancel(); <-done }
	return gr, nil
}

// close stops the gateway and deletes the run's tokens and the namespaces
// it created.
func (gr *gatewayRun) close() {
	if gr.stop != nil {
		gr.stop()
	}
	gr.cleanup()
}

func (gr *gatewayRun) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range gr.ids {
		_ = gr.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "inrun-token-" + id, Namespace: gateway.DefaultNamespace}})
	}
	for i := len(gr.created) - 1; i >= 0; i-- {
		_ = gr.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gr.created[i]}})
	}
}

// send sends a step's request and returns the status and the body.
func (gr *gatewayRun) send(ctx context.Context, r *Request) (int, []byte, error) {
	var body io.Reader
	switch {
	case r.BodyText != nil:
		body = strings.NewReader(*r.BodyText)
	case r.Body != nil:
		data, err := json.Marshal(r.Body)
		if err != nil {
			return 0, nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, gr.url+r.Path, body)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+gr.tokens[r.Token])
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, data, err
}

// intents returns the custom resources the run's tokens made.
func (gr *gatewayRun) intents(ctx context.Context) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := gr.target.BP.Resource
	for _, caller := range gr.callers {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(r.GroupVersionKind.GroupVersion().WithKind(r.Kind + "List"))
		if err := gr.c.List(ctx, l, client.MatchingLabels{gateway.LabelTarget: gr.target.Name(), gateway.LabelCaller: caller}); err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// checkResponse compares an answer with what the step expects.
func checkResponse(what string, status int, body []byte, want *Response) *Failure {
	var problems []string
	var have any
	if len(body) > 0 && json.Unmarshal(body, &have) != nil {
		have = string(body)
	}
	if want.Status != 0 && status != want.Status {
		problems = append(problems, fmt.Sprintf("status: expected %d, got %d", want.Status, status))
	}
	d := ""
	if want.Body != nil {
		if ms := mismatches(have, want.Body); len(ms) > 0 {
			for _, m := range ms {
				problems = append(problems, "body "+m)
			}
			d = diff(have, want.Body)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if d == "" && len(body) > 0 {
		d = "the body: " + strings.TrimSpace(string(body))
	}
	return &Failure{What: what, Problems: problems, Diff: d}
}

// errNoGateway is the error of a request in a run with no gateway: Load
// and Parse refuse such a file, so it is a bug.
var errNoGateway = errors.New("the step sends a request, and the run has no gateway")

// createNamespace creates namespace ns. One still being deleted (by the
// previous run's cleanup, say) is waited for first: nothing can be made
// in it, and it is gone within seconds.
func createNamespace(ctx context.Context, c client.Client, name string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelCase: "true"}}})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		if ns.DeletionTimestamp == nil {
			return err // it exists, and stays
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s is still being deleted after a minute", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
