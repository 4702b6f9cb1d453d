package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/simulate"
)

func newRenderCommand() *cobra.Command {
	var (
		path          string
		objects       []string
		passes        int
		showRBAC      bool
		replyFile     string
		reconcilerCmd string
		reconcilerURL string
	)
	cmd := &cobra.Command{
		Use:   "render CR.yaml",
		Short: "Show offline what a custom resource becomes: children, status and RBAC",
		Long: `Render reconciles one custom resource in memory, as inrun simulate does, and
prints what it becomes: every child as YAML, the custom resource's status
(emit.status, the runtime's conditions and emit.conditions), and the RBAC
the Blueprint needs. No cluster is involved.

Status read from live children shows what an in-memory store reports: no
controller runs there, so a Deployment's readyReplicas stays 0.

Render is offline. A Blueprint with a remote reconciler (reconcile.url,
service or api) needs its answer given: --reply FILE, a recorded
ReconcileResult (YAML or JSON, as a simulate file's reply), or
--reconciler 'COMMAND ARGS', a reconciler (or, for reconcile.api, a stand-in
for the API) to start here for the render, called at --reconciler-url
(default: where the Blueprint says). Nothing else is called.`,
		Example: `  inrun render manifests/cr.yaml
  inrun render manifests/cr.yaml --object manifests/source-secret.yaml
  inrun render manifests/cr.yaml --rbac=false
  inrun render manifests/cr.yaml --reply test/reply.yaml
  inrun render manifests/cr.yaml --reconciler 'python3 app.py' --reconciler-url http://127.0.0.1:8088/reconcile`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			cr, err := simulate.ReadObject(args[0])
			if err != nil {
				return err
			}
			in := simulate.Input{CR: cr, CRFile: args[0], Passes: passes}
			if replyFile != "" && reconcilerCmd != "" {
				return errors.New("give --reply or --reconciler, not both")
			}
			if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
				switch {
				case replyFile != "":
					if in.Reply, err = simulate.ReadReply(replyFile); err != nil {
						return err
					}
				case reconcilerCmd != "":
					in.Reconciler = &simulate.Reconciler{Command: strings.Fields(reconcilerCmd), URL: reconcilerURL}
				default:
					return fmt.Errorf("the Blueprint %s calls a remote reconciler, and render is offline: pass --reply FILE (a recorded ReconcileResult) or --reconciler 'COMMAND ARGS' (one to start here, with --reconciler-url where it listens)", bp.Name)
				}
			} else if replyFile != "" || reconcilerCmd != "" {
				return fmt.Errorf("the Blueprint %s calls no remote reconciler: --reply and --reconciler have nothing to answer", bp.Name)
			}
			for _, p := range objects {
				obj, err := simulate.ReadObject(p)
				if err != nil {
					return err
				}
				in.Objects = append(in.Objects, obj)
			}
			sim, err := simulate.New(bp)
			if err == nil {
				sim = sim.WithComponents(compiledIn)
			}
			if err != nil {
				return err
			}
			res, err := sim.Run(context.Background(), in)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, id := range res.SortedIDs() {
				for _, obj := range res.Children[id] {
					if err := printDoc(out, fmt.Sprintf("child %s", id), cleanForDisplay(obj).Object); err != nil {
						return err
					}
				}
			}
			for id, why := range res.Last().Pending {
				fmt.Fprintf(out, "# child %s is not rendered: %s\n", id, why)
			}
			status := map[string]any{"status": res.CR.Object["status"]}
			what := fmt.Sprintf("status of %s %s", res.CR.GetKind(), res.CR.GetName())
			if res.Gone {
				// ttlSecondsAfterFinished, say, deleted it during the passes.
				what = fmt.Sprintf("%s %s is gone: deleted during the passes; its status as last seen", res.CR.GetKind(), res.CR.GetName())
			}
			if err := printDoc(out, what, status); err != nil {
				return err
			}
			if showRBAC {
				if err := printDoc(out, "RBAC the Blueprint needs", rbac.ClusterRole(bp)); err != nil {
					return err
				}
			}
			if err := res.Last().Err(); err != nil {
				return fmt.Errorf("the reconcile reported errors:\n%w", err)
			}
			return nil
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringArrayVar(&objects, "object", nil, "an object that exists before the reconcile, e.g. a Secret an externalRef reads, or one it selects by label (repeatable)")
	cmd.Flags().IntVar(&passes, "passes", 1, "reconcile passes to run")
	cmd.Flags().BoolVar(&showRBAC, "rbac", true, "also print the RBAC the Blueprint needs")
	cmd.Flags().StringVar(&replyFile, "reply", "", "a recorded ReconcileResult (YAML or JSON) that answers the Blueprint's remote reconciler")
	cmd.Flags().StringVar(&reconcilerCmd, "reconciler", "", "a reconciler to start for the render and call, as 'COMMAND ARGS'")
	cmd.Flags().StringVar(&reconcilerURL, "reconciler-url", "", "where --reconciler listens (default: the Blueprint's reconcile.url, or reconcile.api's scheme and host)")
	return cmd
}

// cleanForDisplay drops the fields the in-memory store adds.
func cleanForDisplay(obj *unstructured.Unstructured) *unstructured.Unstructured {
	o := obj.DeepCopy()
	o.SetResourceVersion("")
	o.SetManagedFields(nil)
	o.SetCreationTimestamp(metav1.Time{})
	return o
}

func printDoc(w io.Writer, title string, obj any) error {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "---\n# %s\n%s", title, strings.TrimLeft(string(raw), "\n"))
	return err
}
