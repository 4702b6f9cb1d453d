package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/gateway/console"
	"github.com/inrun/inrun/gateway/play"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/simulate"
)

// The browser test drives the console in headless Chromium against a real
// gateway on the local control plane, with the interpreted runtime running
// the intent pack's Blueprint and its Python reconciler.

var screenshots = flag.String("screenshots", "", "keep the browser test's screenshots in this directory (default: a temporary one, removed)")

func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

const packDir = "../../packs/intent"

// chromium finds Debian's chromium: a test skips without it, or fails
// where INRUN_REQUIRE_ASSETS=1 (make test, CI).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const how = "no chromium on PATH: install Debian's, apt-get install -y --no-install-recommends chromium (.ci/run does)"
	if os.Getenv(clustertest.EnvRequireAssets) == "1" {
		t.Fatal(how)
	}
	t.Skip(how)
	return ""
}

// consoleEnv is a gateway with its console and play endpoint on the shared
// cluster, the runtime reconciling what it makes.
type consoleEnv struct {
	c   client.Client
	url string
}

func startGateway(t *testing.T) (*consoleEnv, string) {
	t.Helper()
	lc := clustertest.Shared(t)
	cfg := rest.CopyConfig(lc.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(packDir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"apps-staging", "apps-prod", gateway.DefaultNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	// The pack's reconciler on a free port, and the runtime calling it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url := fmt.Sprintf("http://127.0.0.1:%d/reconcile", port)
	rec := &simulate.Reconciler{Command: []string{"python3", "reconciler/reconciler.py"}, Env: map[string]string{"PORT": fmt.Sprint(port)}}
	proc, err := rec.Start(ctx, simulate.StartOptions{URL: url, BaseDir: packDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Stop() })
	bp = bp.WithRemoteURL(url)
	rt := &e2e.InProcess{Blueprints: []*ir.Blueprint{bp}, SkipNameValidation: true}
	stop, err := rt.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })

	// The gateway, as inrun serve mounts its console and play.
	gw, err := gateway.New(gateway.Options{Blueprints: []*ir.Blueprint{bp}, Client: c, Audit: &bytes.Buffer{}, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	gw.Handle(gateway.ConsolePath, console.Handler(gateway.ConsolePath))
	gw.Handle(play.HandlerPattern, play.NewHandler(play.HandlerOptions{Blueprints: []*ir.Blueprint{bp}, Authenticate: gw.Authenticate}))
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	tokens := &gateway.Tokens{Client: c, Namespace: gateway.DefaultNamespace}
	tok, _, err := tokens.Create(ctx, gateway.CreateOptions{Name: "console", Scopes: []string{"deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	return &consoleEnv{c: c, url: srv.URL}, tok
}

// apps lists the Apps in a namespace, by name, those being deleted too.
func (e *consoleEnv) apps(t *testing.T, ns string) []string {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("example.inrun.dev/v1")
	l.SetKind("AppList")
	if err := e.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range l.Items {
		names = append(names, it.GetName())
	}
	return names
}

// browser is one headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
	mu  sync.Mutex
	bad []string // console errors and exceptions of the page
}

const viewportW, viewportH = 1280, 900

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromium(t)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(viewportW, viewportH),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &browser{t: t, dir: *screenshots}
	if b.dir == "" {
		b.dir = t.TempDir()
	} else if err := os.MkdirAll(b.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// A refused request is logged by the browser as a network error:
			// the test sends some on purpose.
			if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" {
				b.mu.Lock()
				b.bad = append(b.bad, m.String())
				b.mu.Unlock()
			}
		}
	}()
	// Every step below is bounded: a page that never shows what a step
	// waits for fails the test when this ends, not hangs it.
	b.ctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(cancel)
	return b
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// set sets the value of the form control with the id, as a person would
// by typing or choosing.
func (b *browser) set(id, value string) {
	b.t.Helper()
	v, _ := json.Marshal(value)
	if !eval[bool](b, fmt.Sprintf(`(e => { e.value = %s; return e.value === %s; })(document.getElementById(%q))`, v, v, id)) {
		b.t.Fatalf("%s cannot take the value %s", id, v)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// box is where the element sel is on the full page, in CSS pixels; with
// text, where its text is (its first line), not its whole box.
func (b *browser) box(sel string, text bool) image.Rectangle {
	b.t.Helper()
	r := eval[[]float64](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q);
		let r = e.getBoundingClientRect();
		if (%t) { const g = document.createRange(); g.selectNodeContents(e); r = g.getClientRects()[0]; }
		return [r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY]; })()`, sel, text))
	return image.Rect(int(r[0]), int(r[1]), int(r[2]), int(r[3]))
}

// shot takes a full-page screenshot, keeps it as name.png, and checks it
// is a real picture of the page: a PNG as wide as the window and as tall
// as the document, not blank, that passes each check.
func (b *browser) shot(name string, checks ...func(image.Image) error) {
	b.t.Helper()
	data, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), data, 0o644); err != nil {
		b.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		b.t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	height := eval[float64](b, `document.documentElement.scrollHeight`)
	if got := img.Bounds().Size(); got.X != viewportW || got.Y < int(height)-1 || got.Y < viewportH-1 {
		b.t.Errorf("screenshot %s is %v; want %d wide and the page's %.0f tall", name, got, viewportW, height)
	}
	colors := map[color.RGBA]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && len(colors) < 50; y += 7 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 7 {
			colors[rgba(img.At(x, y))] = true
		}
	}
	if len(colors) < 20 {
		b.t.Errorf("screenshot %s has %d colours: a blank page?", name, len(colors))
	}
	for _, check := range checks {
		if err := check(img); err != nil {
			b.t.Errorf("screenshot %s (%s): %v", name, filepath.Join(b.dir, name+".png"), err)
		}
	}
}

func rgba(c color.Color) color.RGBA {
	r, g, bl, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}
}

// shows checks that at least share of the pixels of the element sel (its
// text's, with text), found before the screenshot, are near colour want:
// what the page says is painted where it says.
func (b *browser) shows(sel string, text bool, want color.RGBA, share float64) func(image.Image) error {
	b.t.Helper()
	box := b.box(sel, text)
	return func(img image.Image) error {
		r := box.Intersect(img.Bounds())
		if r.Empty() {
			return fmt.Errorf("%s is at %v, outside the picture", sel, box)
		}
		n, near := 0, 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				n++
				c := rgba(img.At(x, y))
				if diff(c.R, want.R)+diff(c.G, want.G)+diff(c.B, want.B) < 60 {
					near++
				}
			}
		}
		if got := float64(near) / float64(n); got < share {
			return fmt.Errorf("%s at %v: %.0f%% of its pixels are near %v, want at least %.0f%%", sel, r, 100*got, want, 100*share)
		}
		return nil
	}
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// The console's colours (console.css).
var (
	green = color.RGBA{0x1a, 0x7f, 0x37, 0xff}
	red   = color.RGBA{0xcf, 0x22, 0x2e, 0xff}
)

// TestConsole: a caller enters a token, reads the targets and their
// fields, sends an intent with bad values and reads each field's problem
// beside it, plays a draft, sends a good intent and watches it become
// ready, and deletes it; screenshots at each step are checked against the
// page.
func TestConsole(t *testing.T) {
	exe := chromium(t)
	e, tok := startGateway(t)
	b := newBrowser(t)
	t.Logf("chromium %s; screenshots in %s", exe, b.dir)

	// A browser opening the gateway lands on the console.
	b.do("opening the gateway", chromedp.Navigate(e.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	if loc := eval[string](b, `location.pathname`); loc != gateway.ConsolePath {
		t.Errorf("/ took the browser to %s, want %s", loc, gateway.ConsolePath)
	}

	// The token: the targets it may use, with their fields.
	b.do("entering the token",
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#targets li[data-target="app"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#field-repository`)))
	if got := eval[string](b, `sessionStorage.getItem("inrun.token")`); got != tok {
		t.Error("the token is not in sessionStorage")
	}
	if strings.Contains(eval[string](b, `location.href`), tok) || eval[string](b, `document.getElementById("token").value`) != "" {
		t.Error("the token shows in the URL or stays in its box")
	}
	rows := eval[[]string](b, `[...document.querySelectorAll('#targets li[data-target="app"] tbody tr')].map(r => r.dataset.field)`)
	if strings.Join(rows, ",") != "repository,environment,version,replicas" {
		t.Errorf("the fields of app: %v", rows)
	}
	if row := b.text(`#targets tr[data-field="repository"]`); !strings.Contains(row, "required") || !strings.Contains(row, "matches ^[a-z0-9-]+/[a-z0-9._-]+$") {
		t.Errorf("the repository row: %q", row)
	}
	// The form follows the fields: an enum is a select with its values,
	// the default said; a pattern is on its input.
	envs := eval[[]string](b, `[...document.querySelectorAll('#field-environment option')].map(o => o.textContent)`)
	if strings.Join(envs, ",") != `(leave out: "staging"),prod,staging` && strings.Join(envs, ",") != `(leave out: "staging"),staging,prod` {
		t.Errorf("the environment select: %v", envs)
	}
	if p := eval[string](b, `document.getElementById("field-repository").pattern`); p != "^[a-z0-9-]+/[a-z0-9._-]+$" {
		t.Errorf("the repository input's pattern: %q", p)
	}
	if l := b.text(`label[for="field-repository"]`); !strings.Contains(l, "repository (required)") {
		t.Errorf("the repository label: %q", l)
	}
	b.shot("1-targets", b.shows(`#targets li[data-target="app"] h3`, true, color.RGBA{0x1b, 0x1f, 0x24, 0xff}, 0.1))

	// Bad values: the gateway's problems, each beside its field; nothing is
	// made.
	b.set("field-repository", "Not A Repo!")
	b.set("field-replicas", "three")
	b.do("sending bad values",
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS("#problem-repository")),
		chromedp.WaitVisible(chromedp.CSS("#problem-replicas")))
	if p := b.text("#problem-repository"); !strings.Contains(p, `repository "Not A Repo!" does not match the pattern`) {
		t.Errorf("the repository problem: %q", p)
	}
	if p := b.text("#problem-replicas"); !strings.Contains(p, "replicas must be an integer") {
		t.Errorf("the replicas problem: %q", p)
	}
	if inv := eval[[]string](b, `[...document.querySelectorAll('[aria-invalid=true]')].map(e => e.id)`); strings.Join(inv, ",") != "field-repository,field-replicas" {
		t.Errorf("the fields marked invalid: %v", inv)
	}
	if vis := eval[bool](b, `document.getElementById("problem-version").hidden`); !vis {
		t.Error("a field with no problem shows one")
	}
	if code := eval[string](b, `document.getElementById("form-problem").dataset.code`); code != gateway.CodeInvalid {
		t.Errorf("the form's problem code %q", code)
	}
	if apps := e.apps(t, "apps-staging"); len(apps) != 0 {
		t.Errorf("a refused intent made Apps: %v", apps)
	}
	b.shot("2-field-problems", b.shows("#problem-repository", true, red, 0.1), b.shows("#problem-replicas", true, red, 0.1))

	// Play the draft: every stage, with the token's scopes; nothing is
	// written.
	b.set("field-repository", "console/web")
	b.set("field-replicas", "")
	b.do("playing a draft",
		chromedp.Click(chromedp.CSS("#play-button")),
		chromedp.WaitVisible(chromedp.CSS(`#play-result[data-accepted="true"] .stage`)))
	stages := eval[[]string](b, `[...document.querySelectorAll('#play-result .stage summary')].map(s => s.textContent)`)
	if len(stages) != 5 || !strings.HasPrefix(stages[0], "1. authenticate: a play token, scopes deploy") || !strings.HasPrefix(stages[4], "5. view") {
		t.Errorf("the play stages: %q", stages)
	}
	if v := b.text(`#play-result .stage:last-child pre`); !strings.Contains(v, `"running": "console/web latest in staging"`) {
		t.Errorf("the play's view: %q", v)
	}
	if apps := e.apps(t, "apps-staging"); len(apps) != 0 {
		t.Errorf("play made Apps: %v", apps)
	}
	b.shot("3-play", b.shows("#play-result .verdict", true, green, 0.1))

	// A draft the token may not send: play says why, in the gateway's words.
	b.set("field-environment", `"prod"`)
	b.do("playing a draft out of scope",
		chromedp.Click(chromedp.CSS("#play-button")),
		chromedp.WaitVisible(chromedp.CSS(`#play-result[data-accepted="false"] .stage`)))
	if v := b.text("#play-result .verdict"); !strings.Contains(v, `environment "prod" is not one of them`) {
		t.Errorf("the refused play: %q", v)
	}

	// The good intent: it shows in the list, and its view follows the
	// runtime until ready.
	const key = `#intents li[data-intent="app/staging/console-web"]`
	b.set("field-environment", "")
	b.set("field-repository", "console/web")
	b.do("sending a good intent",
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS(key)))
	if apps := e.apps(t, "apps-staging"); strings.Join(apps, ",") != "console-web" {
		t.Errorf("the Apps after the intent: %v", apps)
	}
	b.do("waiting for the view to be ready", chromedp.WaitVisible(chromedp.CSS(key+`[data-state="ready"]`)))
	if phase := b.text(key + ` dd[data-key="phase"]`); phase != "Running" {
		t.Errorf("the view's phase: %q", phase)
	}
	if run := b.text(key + ` dd[data-key="running"]`); run != "console/web latest in staging" {
		t.Errorf("the view's running: %q", run)
	}
	if s := b.text("#status"); !strings.Contains(s, "Created intent console-web of app") {
		t.Errorf("the status line: %q", s)
	}
	b.shot("4-ready", b.shows(key+` .state[data-state="ready"]`, false, green, 0.4))

	// Change it: the form holds the intent; Update sends it, and the view
	// follows the runtime to two ready replicas.
	b.do("changing the intent", chromedp.Click(chromedp.CSS(key+` button.edit`)), chromedp.WaitVisible(chromedp.CSS("#editing")))
	if got := eval[[]string](b, `["field-repository", "field-environment", "field-version", "field-replicas"].map(id => document.getElementById(id).value)`); strings.Join(got, " ") != `console/web "staging" latest 1` {
		t.Errorf("the form holds %q", got)
	}
	if s := b.text("#submit"); s != "Update" {
		t.Errorf("the submit button says %q", s)
	}
	b.set("field-replicas", "2")
	b.do("updating the intent", chromedp.Click(chromedp.CSS("#submit")), chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => {
		const li = document.querySelector(%q);
		const n = li && li.querySelector('.view dd[data-key="replicas"]');
		return li && li.dataset.state === "ready" && n && n.textContent === "2";
	})()`, key), chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(0)))
	if s := b.text("#status"); !strings.Contains(s, "Updated intent console-web of app") {
		t.Errorf("the status line after the update: %q", s)
	}
	if apps := e.apps(t, "apps-staging"); strings.Join(apps, ",") != "console-web" {
		t.Errorf("the Apps after the update: %v", apps)
	}

	// Delete asks first: one click arms the button and deletes nothing.
	b.do("asking to delete", chromedp.Click(chromedp.CSS(key+` button.delete`)), chromedp.WaitVisible(chromedp.CSS(key+` button.delete.armed`)))
	if s := b.text(key + ` button.delete`); s != "Confirm delete" {
		t.Errorf("the armed Delete button says %q", s)
	}
	if s := b.text("#status"); !strings.Contains(s, `Click "Confirm delete" to delete intent console-web of app`) {
		t.Errorf("the status line after one click on Delete: %q", s)
	}
	if apps := e.apps(t, "apps-staging"); strings.Join(apps, ",") != "console-web" {
		t.Errorf("one click on Delete deleted: the Apps are %v", apps)
	}
	// The second click deletes: it leaves the list once gone, and the App is gone.
	b.do("deleting", chromedp.Click(chromedp.CSS(key+` button.delete.armed`)), chromedp.WaitNotPresent(chromedp.CSS(key)))
	if s := b.text("#status"); !strings.Contains(s, "console-web of app is deleted") {
		t.Errorf("the status line after delete: %q", s)
	}
	if apps := e.apps(t, "apps-staging"); len(apps) != 0 {
		t.Errorf("the Apps after delete: %v", apps)
	}
	if empty := eval[bool](b, `document.getElementById("intents-empty").hidden`); empty {
		t.Error("the empty list does not say so")
	}
	b.shot("5-deleted")

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.bad {
		t.Errorf("the page logged %s", m)
	}
}
