// Package probertest has fakes for the prober: a scripted ProbeRunner that
// records its calls, and a StatusProvider backed by a map. Both are safe for
// concurrent use. Limits: the runner does not look at the probe's handler or
// honour its timeout; it returns what was scripted for the container and
// probe type, or Success.
package probertest
