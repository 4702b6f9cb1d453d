package sdk

import "fmt"

// Step is the step of a workflow a request is for: sent only when the
// Blueprint declares reconcile.workflow, so that the requests of every
// other Blueprint stay as they were.
type Step struct {
	// Name is the step's name, as reconcile.workflow.steps declares it.
	Name string `json:"name"`
	// Attempt counts the calls of this run of the step, this one
	// included: 1 on the first call, more after failures or Running
	// answers. A call the runtime made but did not record (it crashed
	// before it wrote the status) is made again with the same Attempt.
	Attempt int64 `json:"attempt"`
	// IdempotencyKey is the same for every call of one run of the step,
	// retries and calls after a restart of the runtime included, and
	// differs between runs: <uid>/<generation>/<step>/<run>, where
	// generation is the custom resource's when the run started and run
	// counts the step runs of the workflow, this one included. A
	// reconciler that does a side effect once per key does it once.
	IdempotencyKey string `json:"idempotencyKey"`
}

// StepResult says how the step a request named went. Sent by a reconciler
// of a workflow; omitted, the step succeeded.
type StepResult struct {
	// Phase is StepSucceeded (the default), StepRunning (not finished:
	// ask again after RequeueAfter, 5 seconds without one) or StepFailed
	// (failed for good: the workflow fails, without a retry). A reply
	// that is an HTTP error is a failed attempt, retried up to the
	// step's backoffLimit.
	Phase string `json:"phase,omitempty"`
	// Next names the step to run after this one succeeded, one the
	// Blueprint declares; empty means the step declared after it, or the
	// end of the workflow after the last.
	Next string `json:"next,omitempty"`
	// Message is for people: kept in the step's record in the status.
	Message string `json:"message,omitempty"`
}

// The values of StepResult.Phase, and of the phases the runtime records.
const (
	StepSucceeded = "Succeeded"
	StepRunning   = "Running"
	StepFailed    = "Failed"
)

// stepFields and stepResultFields are the fields of Step and StepResult
// on the wire.
var (
	stepFields       = []string{"name", "attempt", "idempotencyKey"}
	stepResultFields = []string{"phase", "next", "message"}
)

// maxStepMessage bounds StepResult.Message, which the status keeps.
const maxStepMessage = 1024

// step reads a request's step.
func (c *checker) step(v any) *Step {
	m, ok := c.object("step", v)
	if !ok {
		return nil
	}
	c.known("step", m, "a step", stepFields, nil)
	s := &Step{}
	if v, ok := m["name"]; ok {
		s.Name = c.str("step.name", v)
	}
	if v, ok := m["idempotencyKey"]; ok {
		s.IdempotencyKey = c.str("step.idempotencyKey", v)
	}
	if v, ok := m["attempt"]; ok {
		n, isInt := v.(int64)
		if !isInt {
			c.add("step.attempt", "must be a whole number, not "+jsonType(v), "a count of calls, from 1")
		}
		s.Attempt = n
	}
	return s
}

// stepResult reads a Result's step.
func (c *checker) stepResult(v any) *StepResult {
	f, ok := c.fields("step", v, "a step result", stepResultFields, nil)
	if !ok {
		return nil
	}
	return &StepResult{Phase: f[0], Next: f[1], Message: f[2]}
}

func (c *checker) checkStep(s *Step) {
	if s == nil {
		return
	}
	if s.Name == "" {
		c.add("step.name", "is required", "the name of the step the request is for")
	}
	if s.Attempt < 1 {
		c.add("step.attempt", fmt.Sprintf("%d is not a count of calls", s.Attempt), "at least 1")
	}
	if s.IdempotencyKey == "" {
		c.add("step.idempotencyKey", "is required", "<uid>/<generation>/<step>/<run>")
	}
}

func (c *checker) checkStepResult(s *StepResult, finalizing bool) {
	if s == nil {
		return
	}
	if finalizing {
		c.add("step", "is not valid in reply to a finalizing request", "leave it out: the custom resource is being deleted")
	}
	switch s.Phase {
	case "", StepSucceeded, StepRunning, StepFailed:
	default:
		c.add("step.phase", fmt.Sprintf("%q is not valid", s.Phase), "use Succeeded, Running or Failed")
	}
	if s.Next != "" && s.Phase != "" && s.Phase != StepSucceeded {
		c.add("step.next", "is only valid when the step succeeded", "leave it out, or answer phase Succeeded")
	}
	if len(s.Message) > maxStepMessage {
		c.add("step.message", fmt.Sprintf("is %d bytes long", len(s.Message)), fmt.Sprintf("at most %d", maxStepMessage))
	}
}
