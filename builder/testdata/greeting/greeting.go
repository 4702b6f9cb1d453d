// Package greeting is a local module the webapp test module replaces.
package greeting

// Phase is the phase the webapp reconciler reports.
const Phase = "Greeted"
