package main

import (
	"fmt"
	"log/slog"
	"os"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// vkLogger is virtual-kubelet's logger on slog. (virtual-kubelet's own
// log/slog adapter takes the first argument of Debug, Info and the others
// for a string, and VK logs errors with them.)
type vkLogger struct{ l *slog.Logger }

var _ vklog.Logger = vkLogger{}

// Debug, Info, Warn and Error log their arguments as fmt.Sprint prints
// them; the f variants as fmt.Sprintf.
func (v vkLogger) Debug(args ...any)                 { v.l.Debug(fmt.Sprint(args...)) }
func (v vkLogger) Debugf(format string, args ...any) { v.l.Debug(fmt.Sprintf(format, args...)) }
func (v vkLogger) Info(args ...any)                  { v.l.Info(fmt.Sprint(args...)) }
func (v vkLogger) Infof(format string, args ...any)  { v.l.Info(fmt.Sprintf(format, args...)) }
func (v vkLogger) Warn(args ...any)                  { v.l.Warn(fmt.Sprint(args...)) }
func (v vkLogger) Warnf(format string, args ...any)  { v.l.Warn(fmt.Sprintf(format, args...)) }
func (v vkLogger) Error(args ...any)                 { v.l.Error(fmt.Sprint(args...)) }
func (v vkLogger) Errorf(format string, args ...any) { v.l.Error(fmt.Sprintf(format, args...)) }

// Fatal logs and exits, as virtual-kubelet's loggers do.
func (v vkLogger) Fatal(args ...any) {
	v.l.Error(fmt.Sprint(args...))
	os.Exit(1)
}

// Fatalf logs and exits.
func (v vkLogger) Fatalf(format string, args ...any) {
	v.l.Error(fmt.Sprintf(format, args...))
	os.Exit(1)
}

// WithField, WithError and WithFields return the logger with attributes.
func (v vkLogger) WithField(key string, val any) vklog.Logger { return vkLogger{v.l.With(key, val)} }
func (v vkLogger) WithError(err error) vklog.Logger           { return vkLogger{v.l.With("err", err)} }
func (v vkLogger) WithFields(f vklog.Fields) vklog.Logger {
	l := v.l
	for k, val := range f {
		l = l.With(k, val)
	}
	return vkLogger{l}
}
