// Command edgeagent is a whole edge agent on kubeletkit in one file: its own
// pod source (a directory of JSON pods, read every 2s), its own status sink
// (a JSON file per pod, knowing no pod beforehand) and a wrapper around its
// runtime (logging the containers it creates), on the embedded fake runtime.
// docs/agent.md, "Custom pod sources and status sinks", explains each part.
//
//	go run ./edgeagent -pods pods -statuses statuses
package main
