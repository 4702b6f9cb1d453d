// Package filelock takes an exclusive lock on a file, shared between
// processes: an flock(2), released when its holder unlocks or exits,
// however it exits. Inrun locks the control plane's assets directory
// while it builds there, and the pattern cache while it reads and writes
// it, so that two inrun processes at once take turns.
//
// Where flock(2) is missing, Lock does nothing: concurrent processes then
// race, as they would without Inrun.
package filelock
