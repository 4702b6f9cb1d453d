package registry

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/inrun/inrun/ir"
)

// AnnotationDeprecation holds a pattern's lifecycle.deprecation as JSON on
// its manifest, so that it is covered by the pattern's digest and proof.
const AnnotationDeprecation = "dev.inrun.pattern.deprecation"

// Deprecation is a Blueprint's lifecycle.deprecation as a pattern carries
// it: in its manifest's annotations and in the index.
type Deprecation struct {
	// Message says why, and what to do instead.
	Message string `json:"message"`
	// Replacement names what to move to; empty when there is none.
	Replacement string `json:"replacement,omitempty"`
	// After is the last day (YYYY-MM-DD, UTC) a Stack may accept it; empty
	// when acceptances do not lapse on the publisher's side.
	After string `json:"after,omitempty"`
	// Versions is the scope, a semver constraint over the pattern's
	// versions ("*": all of them); empty: the version carrying it.
	Versions string `json:"versions,omitempty"`
}

// DeprecationOf returns the deprecation a compiled Blueprint declares, or
// nil.
func DeprecationOf(bp *ir.Blueprint) *Deprecation {
	if bp == nil || bp.Lifecycle == nil || bp.Lifecycle.Deprecation == nil {
		return nil
	}
	d := bp.Lifecycle.Deprecation
	out := &Deprecation{Message: d.Message, Replacement: d.Replacement, Versions: d.Versions}
	if !d.After.IsZero() {
		out.After = d.After.UTC().Format(time.DateOnly)
	}
	return out
}

// Validate checks what a manifest or an index says: a message, a date,
// a constraint.
func (d *Deprecation) Validate() error {
	if d.Message == "" {
		return fmt.Errorf("deprecation without a message")
	}
	if d.After != "" {
		if _, err := time.Parse(time.DateOnly, d.After); err != nil {
			return fmt.Errorf("deprecation: after %q is not a date", d.After)
		}
	}
	if d.Versions != "" {
		if _, err := semver.NewConstraint(d.Versions); err != nil {
			return fmt.Errorf("deprecation: versions %q: %w", d.Versions, err)
		}
	}
	return nil
}

// Covering is the deprecation that covers version of pattern p, whose
// index entry is ip (nil when unknown): p's own, from its verified manifest,
// else one another version scopes over it, from the index, newest push
// first. inrun run judges it, and inspect shows it.
func Covering(ip *IndexPattern, p *Pattern, version string) *Deprecation {
	if d := p.Deprecation; d != nil && d.Covers(version, version) {
		return d
	}
	if ip == nil {
		return nil
	}
	for _, v := range ip.Versions {
		if d := v.Deprecation; v.Version != version && d != nil && d.Validate() == nil && d.Versions != "" && d.Covers(v.Version, version) {
			return d
		}
	}
	return nil
}

// Covers reports whether the deprecation, carried by version carrier,
// deprecates version: the carrier itself when it has no scope, else every
// semver version its Versions constraint matches, prereleases included.
func (d *Deprecation) Covers(carrier, version string) bool {
	if d.Versions == "" {
		return carrier == version
	}
	c, err := semver.NewConstraint(d.Versions)
	if err != nil {
		return false
	}
	// A constraint leaves prereleases out unless it names one: "<3.0.0"
	// would not deprecate 1.2.0-rc.1, which stayed runnable unwarned.
	c.IncludePrerelease = true
	v, err := semver.NewVersion(version)
	return err == nil && c.Check(v)
}

// Ended reports whether now is past the deprecation's After day: then no
// Stack's acceptance holds any more.
func (d *Deprecation) Ended(now time.Time) bool {
	return d.After != "" && DayPassed(d.After, now)
}

// DayPassed reports whether now (in UTC) is after the whole of day
// (YYYY-MM-DD). A day that does not parse has passed: a date nobody can
// read accepts nothing.
func DayPassed(day string, now time.Time) bool {
	t, err := time.Parse(time.DateOnly, day)
	return err != nil || !now.UTC().Before(t.AddDate(0, 0, 1))
}

// String is the deprecation in one line, for listings and errors.
func (d *Deprecation) String() string {
	s := d.Message
	if d.Replacement != "" {
		s += "; replaced by " + d.Replacement
	}
	if d.After != "" {
		s += "; accepted until " + d.After
	}
	return s
}

func encodeDeprecation(d *Deprecation) string {
	data, _ := json.Marshal(d)
	return string(data)
}

func decodeDeprecation(s string) (*Deprecation, error) {
	var d Deprecation
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, fmt.Errorf("its %s annotation: %w", AnnotationDeprecation, err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("its %s annotation: %w", AnnotationDeprecation, err)
	}
	return &d, nil
}
