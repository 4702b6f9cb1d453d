package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/gateway/console"
	"github.com/inrun/inrun/gateway/play"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/simulate"
)

// serveFlags are the gateway's flags, which inrun run --serve shares.
type serveFlags struct {
	namespace string
	rateLimit float64
	rateBurst int
	maxBody   int64
	maxWait   time.Duration
	console   bool
}

func (f *serveFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.namespace, "gateway-namespace", gateway.DefaultNamespace, "namespace of the tokens' Secrets and the idempotency records' Leases")
	fl.Float64Var(&f.rateLimit, "rate-limit", gateway.DefaultRateLimit, "requests per second per token (429 beyond); negative turns the limit off")
	fl.IntVar(&f.rateBurst, "rate-burst", gateway.DefaultRateBurst, "requests per token at once before the rate limit applies")
	fl.Int64Var(&f.maxBody, "max-body", gateway.DefaultMaxBodyBytes, "largest request body, in bytes (413 beyond)")
	fl.DurationVar(&f.maxWait, "max-wait", gateway.DefaultMaxWait, "longest ?wait= and watch without follow")
	fl.BoolVar(&f.console, "console", true, "serve the web console at "+gateway.ConsolePath+" and the play endpoint it uses; --console=false serves the JSON API alone")
}

func (f *serveFlags) options(bps []*ir.Blueprint, c client.WithWatch) gateway.Options {
	return gateway.Options{Blueprints: bps, Client: c, Namespace: f.namespace, RateLimit: f.rateLimit, RateBurst: f.rateBurst, MaxBodyBytes: f.maxBody, MaxWait: f.maxWait,
		Log: zap.New(zap.UseDevMode(false)).WithName("gateway")}
}

// served keeps the Blueprints with a serve section, and says which it
// leaves out.
func served(bps []*ir.Blueprint, out io.Writer) []*ir.Blueprint {
	var keep []*ir.Blueprint
	for _, bp := range bps {
		if bp.Serve == nil {
			fmt.Fprintf(out, "Not serving Blueprint %s: it has no serve section.\n", bp.Name)
			continue
		}
		keep = append(keep, bp)
	}
	return keep
}

// startGateway starts the gateway on addr in the background; its error,
// or nil once ctx ends, arrives on the channel.
func startGateway(ctx context.Context, cfg *rest.Config, bps []*ir.Blueprint, f *serveFlags, addr string, out io.Writer) (<-chan error, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		return nil, err
	}
	s, err := gateway.New(f.options(bps, c))
	if err != nil {
		return nil, err
	}
	if f.console {
		mountConsole(s, bps)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, addr) }()
	for _, t := range s.Targets() {
		fmt.Fprintf(out, "Serving target %s (%s) at http://%s/v1/targets/%s/intents.\n", t.Name(), t.BP.Resource.Kind, displayAddr(addr), t.Name())
	}
	fmt.Fprintf(out, "The API's OpenAPI document is at http://%s/v1/openapi.json.\n", displayAddr(addr))
	if f.console {
		fmt.Fprintf(out, "The console is at http://%s%s: open it in a browser, with a token.\n", displayAddr(addr), gateway.ConsolePath)
	}
	return done, nil
}

// mountConsole adds the web console and the play endpoint it uses to the
// gateway. Play lives in package play, which the gateway may not import
// (it links the simulator); it has no cluster client and writes nothing.
func mountConsole(s *gateway.Server, bps []*ir.Blueprint) {
	s.Handle(gateway.ConsolePath, console.Handler(gateway.ConsolePath))
	s.Handle(play.HandlerPattern, play.NewHandler(play.HandlerOptions{Blueprints: bps, Authenticate: s.Authenticate}))
}

func displayAddr(addr string) string {
	if rest, ok := strings.CutPrefix(addr, "127.0.0.1:"); ok {
		return "localhost:" + rest
	}
	if strings.HasPrefix(addr, ":") {
		return "localhost" + addr
	}
	return addr
}

const serveLong = `Serve runs the intent gateway: an HTTP JSON API where callers send intents
in their own words (no apiVersion, kind or spec) and read back views.

Each Blueprint with a serve section is a target. A caller creates an intent
with POST /v1/targets/<target>/intents (or POST /v1/intents with "target" in
the body), reads its view with GET .../intents/<name>, lists its intents,
changes one with PUT, deletes one with DELETE, and watches a view as
server-sent events at .../intents/<name>/watch; ?wait=30s waits until the
intent settles. Every request carries a bearer token (inrun serve token
create) whose scopes the Blueprint's serve.tokens grant verbs and
environments. An Idempotency-Key header makes a POST, PUT or DELETE happen
once. GET /v1/openapi.json is the API's OpenAPI 3 document. docs/gateway.md
has all of it.

The web console is served at /console/ (a browser opening / is sent there):
one embedded page over the same API. Enter a token to see the targets it may
use with their fields, your intents with their live views, state and
problems, a form generated from a target's fields that creates or changes an
intent and shows each field's problem next to it, delete, and Play, which
runs the draft intent through every stage as inrun serve play does, with the
token's scopes and a reconcile simulated in memory (POST
/v1/targets/<target>/play; nothing is written to the cluster, and a remote
reconciler is called where the Blueprint says). --console=false serves the
JSON API alone. docs/console.md has the details.

The gateway writes custom resources with server-side apply under its own
field manager (inrun-gateway), never changes one it did not make, and needs
only what "inrun rbac --gateway" prints. It reconciles nothing: run the
runtime too (inrun run), or run both in one process with inrun run --serve.`

func newServeCommand() *cobra.Command {
	var (
		f    serveFlags
		kube kubeFlags
		addr string
	)
	cmd := &cobra.Command{
		Use:   "serve [BLUEPRINT...]",
		Short: "Run the intent gateway: intents in, views out, and its web console",
		Long:  serveLong,
		Example: `  inrun serve                                  # blueprint.yaml, on 127.0.0.1:8070
  inrun serve --address 127.0.0.1:9000 a/blueprint.yaml b/blueprint.yaml
  inrun serve token create --name ci --scope deploy   # then open localhost:8070 in a browser
  curl -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"target": "app", "repository": "myorg/payments-api"}' localhost:8070/v1/intents`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			bps, err := loadBlueprints(args)
			if err != nil {
				return err
			}
			if bps = served(bps, out); len(bps) == 0 {
				return errors.New("no Blueprint has a serve section: add one (docs/blueprint.md#serve)")
			}
			cfg, err := kube.config()
			if err != nil {
				return err
			}
			done, err := startGateway(ctx, cfg, bps, &f, addr, out)
			if err != nil {
				return err
			}
			err = <-done
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("%w\nanother process listens there: pass --address with a free one", err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&addr, "address", gateway.DefaultAddress, "address to listen on")
	f.register(cmd)
	kube.register(cmd.Flags())
	cmd.AddCommand(newTokenCommand(), newPlayCommand())
	return cmd
}

// loadBlueprints compiles the Blueprints at paths (default blueprint.yaml),
// reporting every one's errors.
func loadBlueprints(paths []string) ([]*ir.Blueprint, error) {
	if len(paths) == 0 {
		paths = []string{defaultBlueprint}
	}
	var bps []*ir.Blueprint
	var errs []error
	for _, p := range paths {
		bp, err := loadBlueprint(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bps = append(bps, bp)
	}
	return bps, errors.Join(errs...)
}

// kubeFlags reach a cluster through a kubeconfig.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) register(fl interface {
	StringVar(p *string, name, value, usage string)
}) {
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "path of the kubeconfig (default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&k.context, "context", "", "kubeconfig context to use (default the current one)")
}

func (k *kubeFlags) config() (*rest.Config, error) {
	f := runFlags{kubeconfig: k.kubeconfig, kubeContext: k.context}
	cfg, err := f.restConfig()
	if err == nil {
		err = reachable(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("no cluster reachable: %w\nfix the kubeconfig or --context (inrun --dev prints the KUBECONFIG of the cluster it starts)", err)
	}
	return cfg, nil
}

func newTokenCommand() *cobra.Command {
	var (
		kube      kubeFlags
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list, rotate and revoke the gateway's bearer tokens",
		Long: `Token manages the gateway's bearer tokens. Each is kept in a Secret of the
gateway's namespace that holds only its hash, whose it is (--name), its
scopes and its expiry. A token is printed once, when it is created: keep it.
The Blueprints' serve.tokens grant each scope verbs (create, get, list,
delete) and environments. A revoked or expired token is refused on its next
request.`,
	}
	cmd.PersistentFlags().StringVar(&namespace, "gateway-namespace", gateway.DefaultNamespace, "namespace of the tokens' Secrets")
	kube.register(cmd.PersistentFlags())
	tokens := func(ctx context.Context, create bool) (*gateway.Tokens, error) {
		cfg, err := kube.config()
		if err != nil {
			return nil, err
		}
		c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
		if err != nil {
			return nil, err
		}
		if create {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
			if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating namespace %s: %w", namespace, err)
			}
		}
		return &gateway.Tokens{Client: c, Namespace: namespace}, nil
	}

	var (
		name   string
		scopes []string
		ttl    time.Duration
		grace  time.Duration
	)
	create := &cobra.Command{
		Use:   "create --name NAME --scope SCOPE...",
		Short: "Create a token and print it, once",
		Example: `  inrun serve token create --name ci --scope deploy
  inrun serve token create --name alice --scope release --scope read --ttl 720h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := tokens(cmd.Context(), true)
			if err != nil {
				return err
			}
			tok, info, err := t.Create(cmd.Context(), gateway.CreateOptions{Name: name, Scopes: scopes, TTL: ttl})
			if err != nil {
				return err
			}
			printToken(cmd.OutOrStdout(), cmd.ErrOrStderr(), tok, info)
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "whose token it is, such as ci or alice: intents it makes are labelled with it (required)")
	create.Flags().StringSliceVar(&scopes, "scope", nil, "a scope the token carries; repeat for more (required)")
	create.Flags().DurationVar(&ttl, "ttl", 0, "expire the token this long after now, such as 720h (default, or 0: never); a rotation gives the new token as long")
	_ = create.MarkFlagRequired("name")
	_ = create.MarkFlagRequired("scope")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens: id, name, scopes, state; never the tokens themselves",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := tokens(cmd.Context(), false)
			if err != nil {
				return err
			}
			infos, err := t.List(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tSCOPES\tSTATE\tCREATED\tEXPIRES\tROTATED TO")
			now := time.Now()
			for _, i := range infos {
				exp, to := "never", "-"
				if i.Expires != nil {
					exp = i.Expires.Format(time.RFC3339)
				}
				if i.RotatedTo != "" {
					to = i.RotatedTo
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, i.Name, strings.Join(i.Scopes, ","), i.State(now), i.Created.Format(time.RFC3339), exp, to)
			}
			return w.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: it is refused from its next request on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := tokens(cmd.Context(), false)
			if err != nil {
				return err
			}
			info, err := t.Revoke(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Token %s (%s) is revoked.\n", info.ID, info.Name)
			return nil
		},
	}
	rotate := &cobra.Command{
		Use:   "rotate ID [--grace 1h]",
		Short: "Make a new token of the same name and scopes; the old one ends after --grace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := tokens(cmd.Context(), false)
			if err != nil {
				return err
			}
			tok, info, err := t.Rotate(cmd.Context(), args[0], grace)
			if err != nil {
				return err
			}
			printToken(cmd.OutOrStdout(), cmd.ErrOrStderr(), tok, info)
			if grace > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "The old token %s keeps working for %s.\n", args[0], grace)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "The old token %s is revoked.\n", args[0])
			}
			return nil
		},
	}
	rotate.Flags().DurationVar(&grace, "grace", 0, "how long the old token keeps working, such as 1h (default: it is revoked at once)")
	cmd.AddCommand(create, list, revoke, rotate)
	return cmd
}

// printToken prints a new token alone on stdout, so that
// TOKEN=$(inrun serve token create ...) works, and what it is on stderr.
func printToken(out, info io.Writer, tok string, i *gateway.TokenInfo) {
	exp := "never expires"
	if i.Expires != nil {
		exp = "expires " + i.Expires.Format(time.RFC3339)
	}
	fmt.Fprintf(info, "Token %s for %s, scopes %s, %s. It is shown once: keep it.\n", i.ID, i.Name, strings.Join(i.Scopes, ", "), exp)
	fmt.Fprintln(out, tok)
}

func newPlayCommand() *cobra.Command {
	var (
		path     string
		scopes   []string
		name     string
		simFile  string
		replyArg string
		passes   int
	)
	cmd := &cobra.Command{
		Use:   "play [INTENT.json]",
		Short: "Run one intent through every stage of the gateway locally, with no cluster",
		Long: `Play runs one intent (a file, or - for standard input) through the gateway's
stages as a request would go, and prints what goes in and comes out of each:
what the token allows, the validated intent with its defaults, the custom
resource it becomes, the children and status of a reconcile simulated in
memory (inrun simulate's machinery), and the view the caller would read.

The token is a play token with --scope (default: every scope the target
grants create). A Blueprint with a remote reconciler needs one answering:
play starts the reconciler that test/simulate.yaml starts (--simulate), or
answers with a recorded reply (--reply), or else calls the Blueprint's.

Exit status: 0 when the gateway would accept the intent, 1 when a stage
refuses it (the refusal is printed as the gateway would answer).`,
		Example: `  inrun serve play intents/payments-api.json
  echo '{"repository": "myorg/web", "environment": "prod"}' | inrun serve play - --scope deploy`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			if bp.Serve == nil {
				return fmt.Errorf("%s has no serve section: add one (docs/blueprint.md#serve)", path)
			}
			var intent []byte
			switch {
			case len(args) == 0 || args[0] == "-":
				intent, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), gateway.DefaultMaxBodyBytes+1))
			default:
				intent, err = inputfile.Read(args[0])
			}
			if err != nil {
				return err
			}
			opts := play.Options{Blueprint: bp, Intent: intent, Scopes: scopes, Name: name, Passes: passes, Out: cmd.OutOrStdout()}
			if replyArg != "" {
				data, err := inputfile.Read(replyArg)
				if err != nil {
					return err
				}
				if err := yaml.Unmarshal(data, &opts.Reply); err != nil {
					return fmt.Errorf("--reply %s: %w", replyArg, err)
				}
			} else if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
				file := simFile
				if file == "" {
					file = filepath.Join(filepath.Dir(path), "test", "simulate.yaml")
				}
				if _, err := os.Stat(file); err == nil {
					f, err := simulate.ReadFile(file)
					if err != nil {
						return err
					}
					if f.Reconciler != nil {
						opts.Reconciler, opts.BaseDir = f.Reconciler, filepath.Dir(file)
					} else if f.Reply != nil {
						opts.Reply = f.Reply
					}
				} else if simFile != "" {
					return err
				}
			}
			err = play.Run(cmd.Context(), opts)
			if errors.Is(err, play.ErrRefused) {
				return errReported
			}
			return err
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringSliceVar(&scopes, "scope", nil, "the play token's scopes (default: every scope the target grants create)")
	cmd.Flags().StringVar(&name, "name", "", "the intent's name, as PUT .../intents/NAME gives it")
	cmd.Flags().StringVar(&simFile, "simulate", "", "the simulate file whose reconciler block starts the reconciler (default test/simulate.yaml beside the Blueprint)")
	cmd.Flags().StringVar(&replyArg, "reply", "", "a recorded ReconcileResult (YAML or JSON) to answer the reconciler's calls with")
	cmd.Flags().IntVar(&passes, "passes", 0, "reconcile passes to simulate (default 2)")
	return cmd
}
