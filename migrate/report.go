package migrate

import (
	"fmt"
	"io"
	"strings"
)

// Describe writes the migration's header: its ID, kind and moves.
func (m *Migration) Describe(w io.Writer) {
	fmt.Fprintf(w, "Migration %s of %s.%s/%s:\n", m.ID, m.Kind.Kind, m.Kind.Group, m.Kind.Version)
	for _, mv := range m.Moves {
		fmt.Fprintf(w, "  %s → %s (field %s)\n", strings.Join(mv.From, ", "), mv.To, mv.Field)
	}
}

// Report writes the plan for a person: counts, losses, objects rewritten
// in the old shape since, and the sample diffs.
func (p *Plan) Report(w io.Writer) {
	p.Migration.Describe(w)
	fmt.Fprintf(w, "%d %s objects: %d to move, %d already moved, %d with nothing to move.\n", p.Objects, p.Migration.Kind.Kind, p.ToMove, p.Migrated, p.Untouched)
	if len(p.Losses) > 0 {
		state := "acknowledged (acceptLoss): the snapshots keep the dropped values"
		if p.Refused() {
			state = "NOT acknowledged: apply refuses until the values agree, or the field's migrate section says acceptLoss: true"
		}
		fmt.Fprintf(w, "\nLossy moves (%d), %s:\n", len(p.Losses), state)
		for _, l := range p.Losses {
			mark := ""
			if !l.Accepted {
				mark = " [not acknowledged]"
			}
			fmt.Fprintf(w, "  %s: %s %s would be dropped; %s keeps %s%s\n", l.Object, l.From, Show(l.Dropped, true), p.Migration.to(l.Field), Show(l.Kept, true), mark)
		}
	}
	if len(p.Rewritten) > 0 {
		fmt.Fprintf(w, "\nWritten in the old shape since they were moved (%d): apply leaves them, rollback reports them as drift:\n", len(p.Rewritten))
		for _, o := range p.Rewritten {
			fmt.Fprintf(w, "  %s\n", o)
		}
	}
	if len(p.Samples) > 0 {
		fmt.Fprintf(w, "\nSample diffs (%d of %d):\n", len(p.Samples), p.ToMove)
		for _, d := range p.Samples {
			fmt.Fprintf(w, "  %s\n", d.Object)
			for _, f := range d.Fields {
				fmt.Fprintf(w, "    %s: %s → %s\n", f.Path, f.Before, f.After)
			}
		}
	}
}

// Report writes what Rollback did, every drifted field with its three
// values.
func (r *RollbackResult) Report(w io.Writer) {
	fmt.Fprintf(w, "Restored %d objects; %d needed nothing.\n", r.Restored, r.Unchanged)
	if len(r.Gone) > 0 {
		fmt.Fprintf(w, "Deleted or replaced since the migration (%d), left alone: %s\n", len(r.Gone), strings.Join(r.Gone, ", "))
	}
	if len(r.Drift) > 0 {
		fmt.Fprintf(w, "\nDrift: %d fields edited after the migration:\n", len(r.Drift))
		for _, d := range r.Drift {
			what := "left as it is"
			if d.Forced {
				what = "restored (--force)"
			}
			fmt.Fprintf(w, "  %s %s: before %s, migration wrote %s, live %s: %s\n", d.Object, d.Field, d.Before, d.Written, d.Live, what)
		}
	}
	for _, err := range r.Failed {
		fmt.Fprintf(w, "failed: %v\n", err)
	}
}
