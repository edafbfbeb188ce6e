package hoststats_test

import (
	"fmt"

	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// ParseNetDev reads /proc/net/dev and leaves out the interfaces the node's
// network stats do not count (loopback, veth pairs, other engines'
// bridges).
func ExampleParseNetDev() {
	data := "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		"    lo:  900 9 0 0 0 0 0 0  900 9 0 0 0 0 0 0\n" +
		"  eth0: 1000 10 0 0 0 0 0 0 2000 20 1 0 0 0 0 0\n" +
		"veth12:   50 1 0 0 0 0 0 0   60 1 0 0 0 0 0 0\n"
	ifs, err := hoststats.ParseNetDev([]byte(data))
	if err != nil {
		panic(err)
	}
	for _, i := range ifs {
		fmt.Printf("%s rx=%d tx=%d txErrors=%d\n", i.Name, i.RxBytes, i.TxBytes, i.TxErrors)
	}
	// Output:
	// eth0 rx=1000 tx=2000 txErrors=1
}
