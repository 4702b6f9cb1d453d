package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/rbac"
)

func newRBACCommand() *cobra.Command {
	var (
		path      string
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the least-privilege RBAC the Blueprint needs",
		Long: `Rbac prints, as YAML, the ClusterRole the runtime needs to run this
Blueprint, derived from the Blueprint alone: the custom resource (read, and
patch for finalizers), its status and finalizers, every child kind with the
verbs the runtime uses (get, list, watch, create, patch, delete; only get,
list and watch for an externalRef), Events, and the Lease for leader
election. Nothing else.

With --namespace it prints a Role for a runtime confined to one namespace,
and refuses when the Blueprint uses cluster-scoped kinds.`,
		Example: `  inrun rbac
  inrun rbac | kubectl apply -f -
  inrun rbac --namespace shop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			var obj any = rbac.ClusterRole(bp)
			if namespace != "" {
				if obj, err = rbac.Role(bp, namespace); err != nil {
					return err
				}
			}
			out, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), string(out))
			return err
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "print a Role for this namespace instead of a ClusterRole")
	return cmd
}
