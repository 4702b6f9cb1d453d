package migrate

import (
	"fmt"
	"io"
	"strings"
)

// Report writes the plan for a person: the move's header, then Details.
func (p *KindPlan) Report(w io.Writer) {
	p.Move.Describe(w)
	p.Details(w)
}

// Details writes what the plan found: counts, conflicts, losses and the
// sample diffs.
func (p *KindPlan) Details(w io.Writer) {
	k := p.Move
	fmt.Fprintf(w, "%d %s objects, %d selected: %d to move, %d begun and not finished; %d %s objects made by this move so far. %d children to re-parent.\n",
		p.Objects, k.From.Kind, p.Selected, p.ToMove, p.InProgress, p.Moved, k.To.Kind, p.Children)
	if len(p.Conflicts) > 0 {
		fmt.Fprintf(w, "\nConflicts (%d): apply refuses until they are gone:\n", len(p.Conflicts))
		for _, c := range p.Conflicts {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
	if len(p.Errors) > 0 {
		fmt.Fprintf(w, "\nSelection failed (%d): apply refuses until it evaluates:\n", len(p.Errors))
		for _, e := range p.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	if len(p.Finalized) > 0 {
		fmt.Fprintf(w, "\nOther controllers' finalizers (%d): apply refuses to move one until they are gone:\n", len(p.Finalized))
		for _, f := range p.Finalized {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(p.Losses) > 0 {
		state := "acknowledged (acceptLoss): the snapshots keep the dropped values"
		if !k.AcceptLoss {
			state = "NOT acknowledged: apply refuses until the migrate section says acceptLoss: true"
		}
		fmt.Fprintf(w, "\nLossy moves (%d), %s:\n", len(p.Losses), state)
		for _, l := range p.Losses {
			fmt.Fprintf(w, "  %s: %s %s would be dropped: %s has no such field\n", l.Object, l.Path, l.Value, k.To.Kind)
		}
	}
	if len(p.Dependents) > 0 {
		fmt.Fprintf(w, "\nOwned by custom resources to move, not Inrun's children (%d): garbage collection does not delete them:\n", len(p.Dependents))
		for _, d := range p.Dependents {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if len(p.Unchecked) > 0 {
		fmt.Fprintf(w, "\nNot looked at for objects the custom resources own: %s\n", strings.Join(p.Unchecked, ", "))
	}
	if len(p.Samples) > 0 {
		fmt.Fprintf(w, "\nSample diffs (%d of %d):\n", len(p.Samples), p.ToMove+p.InProgress)
		for _, d := range p.Samples {
			fmt.Fprintf(w, "  %s\n", d.Object)
			for _, f := range d.Fields {
				fmt.Fprintf(w, "    %s: %s → %s\n", f.Path, f.Before, f.After)
			}
		}
	}
}
