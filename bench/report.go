package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Results are the raw figures of one benchmark run, as -json writes them.
type Results struct {
	N             int     `json:"n"`
	Workers       int     `json:"workers"`
	LimitWorkers  int     `json:"limitWorkers"`
	Loaders       int     `json:"loaders"`
	QPS           float64 `json:"qps"`
	QuietSeconds  float64 `json:"quietSeconds"`
	SettleSeconds float64 `json:"settleSeconds"`
	// Headless says the Services were headless (-headless).
	Headless bool `json:"headless,omitempty"`
	// Paired says each Inrun operator ran beside a hand-written one
	// (-paired).
	Paired  bool      `json:"paired,omitempty"`
	Started time.Time `json:"started"`
	Machine Machine   `json:"machine"`
	Runs    []*Run    `json:"runs"`
	// CPUProfiles are the profile files written with -cpuprofile, by kind
	// and round ("interpreted/1").
	CPUProfiles map[string]string `json:"cpuProfiles,omitempty"`
}

// Machine describes where the figures were measured.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel,omitempty"`
	Memory   string `json:"memory,omitempty"`
	GOOS     string `json:"goos"`
	GOARCH   string `json:"goarch"`
	Kernel   string `json:"kernel,omitempty"`
	Go       string `json:"go"`
}

// Run is one way of reconciling, measured.
type Run struct {
	Kind string `json:"kind"`
	// Round counts the rounds from 1; each runs every kind once.
	Round int `json:"round"`
	// InProcess marks the limit, whose memory figures are the benchmark's
	// own process and so not comparable.
	InProcess bool `json:"inProcess,omitempty"`
	// Beside is, for a hand-written operator run side by side with
	// another (-paired), that other's kind.
	Beside string `json:"beside,omitempty"`
	Error  string `json:"error,omitempty"`
	Create *Phase `json:"create,omitempty"`
	Edit   *Phase `json:"edit,omitempty"`
}

// label names the run in namespaces, logs and profiles: its kind, or the
// hand-written operator beside another kind.
func (r *Run) label() string {
	if r.Beside != "" {
		return r.Kind + "-beside-" + r.Beside
	}
	return r.Kind
}

// Phase is what it took to converge after creating, or after editing,
// every Website.
type Phase struct {
	// SharedControlPlane marks a phase run side by side with another
	// operator's (-paired): the API server's figures (Writes,
	// ControlPlaneWrites, QuietWrites, ServerByRequest, the control plane's
	// CPUSeconds) are both operators'.
	SharedControlPlane bool `json:"sharedControlPlane,omitempty"`
	// LoadSeconds is how long the loader took to create or edit them all.
	LoadSeconds float64 `json:"loadSeconds"`
	// ReadySeconds is from the first create or edit until every Website
	// reports Ready for its generation.
	ReadySeconds float64 `json:"readySeconds"`
	// SettledSeconds is from the same start until the operator went quiet:
	// its last write, or the last backlog seen if later, found once it has
	// written nothing and had no backlog for settleSeconds.
	SettledSeconds float64 `json:"settledSeconds"`
	// Writes are the writes to Websites, Deployments and Services
	// (status included) that the API server served until it settled, less
	// the loader's.
	Writes      int64   `json:"writes"`
	WritesPerCR float64 `json:"writesPerCR"`
	// ClientWrites are the same writes as the operator's own client
	// counted them: a cross-check of Writes.
	ClientWrites      int64   `json:"clientWrites"`
	ClientWritesPerCR float64 `json:"clientWritesPerCR"`
	// StatusChanges are the updates of a Website's status that a watch
	// saw: the status writes that changed something. Status writes beyond
	// them changed nothing.
	StatusChanges      int64   `json:"statusChanges"`
	StatusChangesPerCR float64 `json:"statusChangesPerCR"`
	// Events are the Events the operator's client recorded.
	Events      int64   `json:"events"`
	EventsPerCR float64 `json:"eventsPerCR"`
	// OtherClientWrites are the operator's remaining writes, such as
	// access reviews.
	OtherClientWrites int64 `json:"otherClientWrites"`
	// Reconciles is the growth of controller_runtime_reconcile_total;
	// -1 for the limit, which has no controller.
	Reconciles      int64   `json:"reconciles"`
	ReconcilesPerCR float64 `json:"reconcilesPerCR"`
	// QuietWrites are the object writes the API server served during the
	// quiet window after settling; QuietClientWrites every write the
	// operator's client sent then, Events included. Both must be zero.
	QuietWrites          int64            `json:"quietWrites"`
	QuietClientWrites    int64            `json:"quietClientWrites"`
	QuietClientByRequest map[string]int64 `json:"quietClientByRequest,omitempty"`
	// RSSBytes and PeakRSSBytes are the operator process's VmRSS when it
	// settled and its VmHWM over the phase.
	RSSBytes     int64 `json:"rssBytes"`
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// ControlPlaneWrites are the writes the API server served that neither
	// the operator nor the loader sent: the Deployment and ReplicaSet
	// controllers', the scheduler's, kwok's.
	ControlPlaneWrites      int64   `json:"controlPlaneWrites"`
	ControlPlaneWritesPerCR float64 `json:"controlPlaneWritesPerCR"`
	// CPUSeconds is the CPU time used from the start of the phase until
	// the operator settled, by the operator's process ("operator", not
	// for the limit, which runs in the benchmark's process) and by each
	// control plane component.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// ServerByRequest are every write the API server served during the
	// phase, less the loader's, by verb and resource: the operator's and
	// the control plane's own (the Deployment controller, the scheduler,
	// kwok). ClientByRequest are the operator's, by its own count.
	ServerByRequest map[string]int64 `json:"serverByRequest"`
	ClientByRequest map[string]int64 `json:"clientByRequest"`
}

func (r *Results) write(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// figure is one row of the table.
type figure struct {
	name string
	// value reads the figure of a run; ok is false where it has none.
	value func(*Run) (v float64, ok bool)
	// format renders a value.
	format func(float64) string
}

func phaseFigure(name string, edit bool, v func(*Phase) (float64, bool), format func(float64) string) figure {
	return figure{name: name, format: format, value: func(r *Run) (float64, bool) {
		ph := r.Create
		if edit {
			ph = r.Edit
		}
		if ph == nil {
			return 0, false
		}
		return v(ph)
	}}
}

func secondsFmt(v float64) string { return fmt.Sprintf("%.1fs", v) }
func perCRFmt(v float64) string   { return fmt.Sprintf("%.2f", v) }
func countFmt(v float64) string   { return fmt.Sprintf("%.0f", v) }
func mibFmt(v float64) string     { return fmt.Sprintf("%.0f MiB", v/(1<<20)) }

func figures() []figure {
	var out []figure
	for _, p := range []struct {
		label string
		edit  bool
	}{{"create", false}, {"edit", true}} {
		out = append(out,
			phaseFigure(p.label+": all Ready", p.edit, func(ph *Phase) (float64, bool) { return ph.ReadySeconds, true }, secondsFmt),
			phaseFigure(p.label+": quiet", p.edit, func(ph *Phase) (float64, bool) { return ph.SettledSeconds, true }, secondsFmt),
			phaseFigure(p.label+": writes/CR (API server)", p.edit, func(ph *Phase) (float64, bool) { return ph.WritesPerCR, !ph.SharedControlPlane }, perCRFmt),
			phaseFigure(p.label+": writes/CR (own client)", p.edit, func(ph *Phase) (float64, bool) { return ph.ClientWritesPerCR, true }, perCRFmt),
			phaseFigure(p.label+": status changes/CR", p.edit, func(ph *Phase) (float64, bool) { return ph.StatusChangesPerCR, true }, perCRFmt),
			phaseFigure(p.label+": events/CR", p.edit, func(ph *Phase) (float64, bool) { return ph.EventsPerCR, true }, perCRFmt),
			phaseFigure(p.label+": writes+events/CR", p.edit, func(ph *Phase) (float64, bool) { return ph.ClientWritesPerCR + ph.EventsPerCR, true }, perCRFmt),
			phaseFigure(p.label+": reconciles/CR", p.edit, func(ph *Phase) (float64, bool) { return ph.ReconcilesPerCR, ph.Reconciles >= 0 }, perCRFmt),
			phaseFigure(p.label+": control-plane writes/CR", p.edit, func(ph *Phase) (float64, bool) { return ph.ControlPlaneWritesPerCR, !ph.SharedControlPlane }, perCRFmt),
			phaseFigure(p.label+": operator CPU", p.edit, func(ph *Phase) (float64, bool) {
				v, ok := ph.CPUSeconds[operatorCPU]
				return v, ok
			}, secondsFmt),
			phaseFigure(p.label+": kube-apiserver CPU", p.edit, func(ph *Phase) (float64, bool) {
				v, ok := ph.CPUSeconds["kube-apiserver"]
				return v, ok && !ph.SharedControlPlane
			}, secondsFmt),
			phaseFigure(p.label+": writes in quiet window", p.edit, func(ph *Phase) (float64, bool) {
				if ph.SharedControlPlane {
					return float64(ph.QuietClientWrites), true
				}
				return float64(max(ph.QuietWrites, ph.QuietClientWrites)), true
			}, countFmt),
		)
	}
	notInProcess := func(r *Run) bool { return !r.InProcess }
	out = append(out,
		figure{name: "RSS when settled (created)", format: mibFmt, value: func(r *Run) (float64, bool) {
			return float64(rssOf(r.Create)), r.Create != nil && notInProcess(r)
		}},
		figure{name: "peak RSS, create", format: mibFmt, value: func(r *Run) (float64, bool) {
			return float64(peakOf(r.Create)), r.Create != nil && notInProcess(r)
		}},
		figure{name: "peak RSS, edit", format: mibFmt, value: func(r *Run) (float64, bool) {
			return float64(peakOf(r.Edit)), r.Edit != nil && notInProcess(r)
		}},
	)
	return out
}

func rssOf(ph *Phase) int64 {
	if ph == nil {
		return 0
	}
	return ph.RSSBytes
}

func peakOf(ph *Phase) int64 {
	if ph == nil {
		return 0
	}
	return ph.PeakRSSBytes
}

// printTable prints every figure of every kind, with its ratio to the
// limit (×L) and to the hand-written operator (×H). With several rounds a
// kind's figure is its median over the rounds, and the times of each round
// follow the table, so that the spread shows. With -paired each Inrun kind
// follows the hand-written operator that ran beside it, in a column of its
// own, and ×H compares them.
func printTable(w io.Writer, res *Results) {
	var columns []string
	byColumn := map[string][]*Run{}
	rounds := map[int]bool{}
	for _, r := range res.Runs {
		col := r.Kind
		if res.Paired {
			col = r.label()
		}
		if _, ok := byColumn[col]; !ok {
			columns = append(columns, col)
		}
		byColumn[col] = append(byColumn[col], r)
		rounds[r.Round] = true
	}
	order := func(col string) int {
		kind, beside, _ := strings.Cut(col, "-beside-")
		if beside != "" {
			return 2*slices.Index(runnable, beside) - 1 // just before the kind it ran beside
		}
		return 2 * slices.Index(runnable, kind)
	}
	slices.SortStableFunc(columns, func(a, b string) int { return order(a) - order(b) })
	of := ""
	if len(rounds) > 1 {
		of = fmt.Sprintf("; each figure the median of %d rounds", len(rounds))
	}
	service := "a Service"
	if res.Headless {
		service = "a headless Service"
	}
	fmt.Fprintf(w, "\nConvergence of %d Websites (each a Deployment, %s and a status), %d CPUs, %d operator workers%s; ×L is the ratio to the limit, ×H to the hand-written operator.\n", res.N, service, res.Machine.CPUs, res.Workers, of)
	if res.Paired {
		fmt.Fprintf(w, "Paired: each Inrun operator ran side by side with the hand-written one in the column before it, each in its namespace, loaded at the same moment; ×H compares the two. The API server's figures are the pair's and left out (—).\n")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\t%s\t\n", strings.Join(columns, "\t"))
	for _, f := range figures() {
		cells := []string{f.name}
		for _, col := range columns {
			hand := byColumn[kindHandwritten]
			if res.Paired {
				hand = byColumn[kindHandwritten+"-beside-"+col]
			}
			cells = append(cells, cell(f, byColumn[col], byColumn[kindLimit], hand))
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(cells, "\t"))
	}
	tw.Flush()
	if len(rounds) > 1 {
		fmt.Fprintf(w, "\nAll Ready, create / edit, by round:\n")
		width := 0
		for _, col := range columns {
			width = max(width, len(col))
		}
		for _, col := range columns {
			var times []string
			for _, r := range byColumn[col] {
				if r.Create != nil && r.Edit != nil {
					times = append(times, fmt.Sprintf("%.1fs / %.1fs", r.Create.ReadySeconds, r.Edit.ReadySeconds))
				} else {
					times = append(times, "failed")
				}
			}
			fmt.Fprintf(w, "  %-*s  %s\n", width, col, strings.Join(times, ", "))
		}
	}
	for _, r := range res.Runs {
		if r.Error != "" {
			fmt.Fprintf(w, "\n%s (round %d) failed: %s\n", r.label(), r.Round, r.Error)
		}
	}
}

// median is a figure's median over the runs that have it.
func median(f figure, runs []*Run) (float64, bool) {
	var vs []float64
	for _, r := range runs {
		if r.Error != "" && r.Create == nil {
			continue
		}
		if v, ok := f.value(r); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

func cell(f figure, runs, limit, hand []*Run) string {
	v, ok := median(f, runs)
	if !ok {
		if len(runs) > 0 && runs[0].Create == nil {
			return "failed"
		}
		return "—"
	}
	s := f.format(v)
	for _, base := range []struct {
		runs []*Run
		mark string
	}{{limit, "L"}, {hand, "H"}} {
		if len(base.runs) == 0 || len(runs) == 0 || base.runs[0] == runs[0] {
			continue
		}
		if b, ok := median(f, base.runs); ok && b != 0 {
			s += fmt.Sprintf(" %.2f×%s", v/b, base.mark)
		}
	}
	return s
}
