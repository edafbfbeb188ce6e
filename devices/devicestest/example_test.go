package devicestest_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

// A plugin with two devices, one failing call and a record of the calls.
func Example() {
	dir, _ := os.MkdirTemp("", "dp")
	defer os.RemoveAll(dir)
	p := devicestest.New("example.com/gpu", devicestest.Healthy("0", "1")...)
	p.Fail = func(method string) error {
		if method == devicestest.GetDevicePluginOptions {
			return errors.New("not now")
		}
		return nil
	}
	if err := p.Start(dir, "gpu.sock"); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Stop()
	_, err := p.GetDevicePluginOptions(context.Background(), nil)
	fmt.Println(err, p.Calls())
	// Output: not now [GetDevicePluginOptions]
}
