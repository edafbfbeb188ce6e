package logind_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/nodeshutdown/logind"
)

// Without a bus the trigger gives up at once, as upstream's kubelet goes
// on without graceful shutdown.
func TestTriggerWithoutLogind(t *testing.T) {
	trig, err := logind.New(logind.Options{GracePeriod: 30 * time.Second,
		Dial: func() (*dbus.Conn, error) { return nil, errors.New("no system bus") }})
	require.NoError(t, err)
	require.NoError(t, trig.Run(context.Background(), nil))

	_, err = logind.New(logind.Options{})
	require.EqualError(t, err, "logind trigger: GracePeriod must be positive")
}
