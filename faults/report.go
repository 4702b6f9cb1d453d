package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Results are one run of the matrix, as -json writes them.
type Results struct {
	Started time.Time `json:"started"`
	// Command is how the run was made.
	Command string `json:"command"`
	Quick   bool   `json:"quick"`
	// N is how many Widgets the kill and failover rows converge.
	N int `json:"n"`
	// MaxBackoffSeconds is the runtimes' --max-backoff.
	MaxBackoffSeconds float64 `json:"maxBackoffSeconds"`
	// WindowSeconds is how long reconciles are counted while a fault lasts.
	WindowSeconds float64 `json:"windowSeconds"`
	Machine       string  `json:"machine"`
	Rows          []*Row  `json:"rows"`
}

// Row is one fault, what Inrun must do about it, and what it did.
type Row struct {
	ID       string `json:"id"`
	Fault    string `json:"fault"`
	Expected string `json:"expected"`
	// Measured sums up what was seen, in the words of the table.
	Measured string `json:"measured"`
	Pass     bool   `json:"pass"`
	// Problems are every expectation that did not hold.
	Problems []string `json:"problems,omitempty"`
	Seconds  float64  `json:"seconds"`
	// Figures are the row's measurements, by name (see docs/reliability.md).
	Figures map[string]float64 `json:"figures,omitempty"`
	// Messages are what the runtime said: the Degraded condition and the
	// Warning Event.
	Messages map[string]string `json:"messages,omitempty"`

	measured []string
}

// fail records an expectation that did not hold.
func (r *Row) fail(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// failAll records each of problems.
func (r *Row) failAll(problems []string) {
	r.Problems = append(r.Problems, problems...)
}

// saw adds a phrase to the measured summary.
func (r *Row) saw(format string, args ...any) {
	r.measured = append(r.measured, fmt.Sprintf(format, args...))
}

func (r *Row) figure(name string, v float64) {
	if r.Figures == nil {
		r.Figures = map[string]float64{}
	}
	r.Figures[name] = v
}

func (r *Row) message(name, v string) {
	if r.Messages == nil {
		r.Messages = map[string]string{}
	}
	r.Messages[name] = v
}

// printTable writes the rows as a Markdown table, then every problem.
func printTable(w io.Writer, res *Results) {
	fmt.Fprintln(w, "| fault | expected | measured | result |")
	fmt.Fprintln(w, "|---|---|---|---|")
	failed := 0
	for _, r := range res.Rows {
		result := "pass"
		if !r.Pass {
			result = "**FAIL**"
			failed++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(r.Fault), cell(r.Expected), cell(r.Measured), result)
	}
	fmt.Fprintf(w, "\n%d rows, %d passed, %d failed.\n", len(res.Rows), len(res.Rows)-failed, failed)
	for _, r := range res.Rows {
		for _, p := range r.Problems {
			fmt.Fprintf(w, "%s: %s\n", r.ID, p)
		}
	}
}

// cell makes s fit in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

func (res *Results) write(path string) error {
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// describeMachine says where the matrix ran.
func describeMachine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
