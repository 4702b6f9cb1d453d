package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/importer/kro"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

func newImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert another tool's definitions into Blueprints",
		Long: `Import converts what another tool defines into Blueprints, and lists with
file:line:col everything it could not convert.

  inrun import kro RGD.yaml    kro ResourceGraphDefinitions`,
	}
	cmd.AddCommand(newImportKroCommand())
	return cmd
}

func newImportKroCommand() *cobra.Command {
	var (
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "kro RGD.yaml... [CRD.yaml...]",
		Short: "Convert kro ResourceGraphDefinitions into Blueprints",
		Long: `Import kro converts every ResourceGraphDefinition (kro.run/v1alpha1) in the
files given, which may hold several YAML documents each, into a Blueprint.
One RGD becomes DIR/blueprint.yaml; several become DIR/<name>/blueprint.yaml
each. The schema section makes the CRD, so no manifest is needed.

The mapping keeps kro's spelling where the meaning is the same:

  metadata.name             metadata.name, made a DNS-1123 label when it is
                            not one (webapp.kro.run becomes webapp)
  spec.schema               schema, copied (SimpleSchema); group: kro.run
                            when the RGD names none, as kro defaults it
  spec.schema.status        emit.status (Inrun infers the status schema)
  spec.resources            onReconcile: id, template, externalRef,
                            readyWhen, includeWhen and forEach as they are
  ${schema.spec.x}          ${self.spec.x} (schema.metadata likewise)
  ${x != null}              ${has(x)}, and x == null is !has(x): a field of a
                            Blueprint's objects is never null
  a resource whose kind     a child, and a uses: entry naming that RGD's
  is another imported RGD   Blueprint
  a resource of a kind      a child, and a uses: crd entry naming the CRD,
  another operator          copied to crds/<name>.yaml: give the CRD
  reconciles (ACK, cert-    manifest in the same import (kubectl get crd
  manager, Gateway API)     NAME -o yaml > crd.yaml), as kro reads it from
                            the cluster

Expressions are rewritten on their parse, so text in string literals is left
alone, and each keeps its spelling otherwise. Comments are kept.

Not converted, and listed with its position and a hint (exit status 1; the
Blueprints hold the rest, so edit them and run inrun check):

  - kro's functions a Blueprint does not have: omit(), hash.md5,
    lists.setAtIndex/insertAtIndex/removeAtIndex, runtime.newCondition and
    runtime.condition;
  - custom status conditions (spec.schema.status.conditions): write them
    under emit.conditions;
  - readyWhen on an externalRef by selector (a list, which has no readiness
    in a Blueprint);
  - a kind that is neither built into Kubernetes, nor the kind of an RGD
    converted in the same run, nor of a CRD given (below);
  - unknown fields, expressions that do not parse, documents that are not
    ResourceGraphDefinitions.

Notes list changes that keep the meaning (a renamed Blueprint, a key set
twice to the same value). Existing files are never overwritten without
--force; then nothing is written.`,
		Example: `  # One RGD into the current directory
  inrun import kro rgd.yaml && inrun check

  # Chained RGDs: each into out/<name>/, the parent using its children
  inrun import kro tenant.yaml environment.yaml application.yaml -o out

  # An RGD that creates ACK kinds, with their CRDs from the cluster
  kubectl get crd vpcs.ec2.services.k8s.aws subnets.ec2.services.k8s.aws -o yaml > ack-crds.yaml
  inrun import kro network-stack.yaml ack-crds.yaml

  # Again, over what the first run wrote
  inrun import kro rgd.yaml -o webapp --force`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []kro.File
			var unreadable []error
			for _, a := range args {
				data, err := os.ReadFile(a)
				if err != nil {
					unreadable = append(unreadable, err)
					continue
				}
				files = append(files, kro.File{Name: a, Data: data})
			}
			if len(unreadable) > 0 {
				return errors.Join(unreadable...)
			}
			res, convErr := kro.Convert(files)
			w := cmd.OutOrStdout()
			if len(res.Blueprints) > 0 {
				paths, err := kro.Write(out, res, kro.WriteOptions{Force: force})
				if err != nil {
					return err
				}
				for i, bp := range res.Blueprints {
					fmt.Fprintf(w, "%s: %s from ResourceGraphDefinition %s, with %s%s\n",
						paths[i], describeKind(bp), bp.RGD, plural(bp.Children, "child", "children"), usesText(bp))
				}
				for i, c := range res.CRDs {
					fmt.Fprintf(w, "%s: CRD %s, copied for the Blueprints that use it\n", paths[len(res.Blueprints)+i], c.Name)
				}
			}
			for _, n := range res.Notes {
				fmt.Fprintln(w, n)
			}
			if convErr == nil {
				return nil
			}
			n := len(diag.All(convErr))
			if len(res.Blueprints) == 0 {
				return fmt.Errorf("%w\nno Blueprint was written: fix the %s above and import again",
					convErr, plural(n, "mistake", "mistakes"))
			}
			return fmt.Errorf("%w\n%s not converted; the Blueprints hold the rest: edit them, then run inrun check",
				convErr, plural(n, "construct was", "constructs were"))
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", ".", "the directory to write the Blueprints into")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite Blueprints that exist")
	return cmd
}

func describeKind(bp *kro.Blueprint) string {
	if bp.GroupVersionKind.Kind == "" {
		return bp.Name
	}
	return bp.Name + " (" + ir.FormatKind(bp.GroupVersionKind) + ")"
}

func usesText(bp *kro.Blueprint) string {
	uses := slices.Clone(bp.Uses)
	for _, c := range bp.CRDs {
		uses = append(uses, "CRD "+c)
	}
	if len(uses) == 0 {
		return ""
	}
	return ", using " + strings.Join(uses, ", ")
}

// plural writes n and the singular or plural form: "1 child", "2 children".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
