// Package eventtest records the events that blocks emit, for tests. Its
// Recorder has client-go's Eventf method shape, which is the shape of every
// block's EventRecorder interface.
package eventtest
