package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/rbac"
)

func newRBACCommand() *cobra.Command {
	var (
		path      string
		namespace string
		gw        bool
		gwNS      string
		leaseNS   string
	)
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the least-privilege RBAC the Blueprint needs",
		Long: `Rbac prints, as YAML, the ClusterRole the runtime needs to run this
Blueprint, derived from the Blueprint alone: the custom resource (read, and
patch for finalizers), its status and finalizers, every child kind with the
verbs the runtime uses (get, list, watch, create, patch, delete; only get,
list and watch for an externalRef), and Events; delete on the custom
resource only when its workflow deletes it when done
(reconcile.workflow.ttlSecondsAfterFinished); update on the custom
resource, its status and reconcile.resources' kinds only for a
controller-runtime reconciler (reconcile.go.controller), which writes them
itself. Nothing else. Last comes a Role
for the Leases of leader election and of --shards, in the leader-election
namespace only (--leader-election-namespace): no rule grants Leases in
every namespace, where kube-node-lease holds the nodes' heartbeats.

A Blueprint that uses others (uses: blueprint:) may write their custom
resources like any child kind; since inrun run runs the used Blueprints too,
their roles are printed as well, each its own YAML document.

With --namespace it prints a Role for a runtime confined to one namespace,
and refuses when the Blueprint uses cluster-scoped kinds.

With --gateway it prints what the intent gateway (inrun serve) needs instead:
a ClusterRole to read, watch, apply (patch) and delete the custom resources
of the Blueprint's kind, and create Events; and a Role in the gateway's
namespace (--gateway-namespace) to read the tokens' Secrets and keep the
idempotency records' Leases. The gateway reads no children. Give it a
namespace of its own: it reads the Secrets there.

A rule that lets whoever may create the custom resources use more than
their own rights (bind on every role, for a binding child whose role is an
expression; escalate, for a role child) is preceded by a # WARNING
comment; inrun check prints the same as a note.`,
		Example: `  inrun rbac
  inrun rbac | kubectl apply -f -
  inrun rbac --namespace shop
  inrun rbac --gateway`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			if gw {
				if bp.Serve == nil {
					return fmt.Errorf("%s has no serve section: the gateway would serve nothing of it", path)
				}
				cr, role := rbac.Gateway([]*ir.Blueprint{bp}, gwNS)
				a, err := yaml.Marshal(cr)
				if err != nil {
					return err
				}
				b, err := yaml.Marshal(role)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s---\n%s", a, b)
				return err
			}
			// inrun run runs the Blueprints bp uses too: their roles follow.
			all := ir.WithUsed([]*ir.Blueprint{bp})
			for i, b := range append([]*ir.Blueprint{bp}, all[:len(all)-1]...) {
				var obj any = rbac.ClusterRole(b)
				if namespace != "" {
					if obj, err = rbac.Role(b, namespace); err != nil {
						return err
					}
				}
				out, err := yaml.Marshal(obj)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "---")
				}
				if b != bp {
					fmt.Fprintf(cmd.OutOrStdout(), "# Blueprint %s uses %s (%s), which inrun run runs too\n", bp.Name, b.Name, b.File)
				}
				for _, w := range rbac.Warnings(b) {
					fmt.Fprintf(cmd.OutOrStdout(), "# WARNING: %s\n", w)
				}
				if _, err := fmt.Fprint(cmd.OutOrStdout(), string(out)); err != nil {
					return err
				}
			}
			out, err := yaml.Marshal(rbac.OwnNamespaceRole("inrun-leases", leaseNS))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "---\n# The Leases of inrun run --leader-elect and --shards, in its --leader-election-namespace\n%s", out)
			return err
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "print a Role for this namespace instead of a ClusterRole")
	cmd.Flags().BoolVar(&gw, "gateway", false, "print the RBAC of the intent gateway (inrun serve) instead of the runtime's")
	cmd.Flags().StringVar(&gwNS, "gateway-namespace", gateway.DefaultNamespace, "the gateway's namespace, with --gateway")
	cmd.Flags().StringVar(&leaseNS, "leader-election-namespace", "default", "the namespace of the Leases' Role: inrun run's --leader-election-namespace")
	return cmd
}
