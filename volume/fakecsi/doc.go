// Package fakecsi is a fake CSI node driver served over gRPC, for tests of
// the volume block's CSI plugin: it speaks the CSI Identity and Node
// services (github.com/container-storage-interface/spec) on a real unix
// socket.
//
// It mounts nothing. NodePublishVolume creates the target directory and
// writes a file "volume-id" in it holding the volume ID, so a test can see
// what a container would; NodeUnpublishVolume removes the target.
// NodeStageVolume (advertised when Options.StageUnstage is set) checks that
// the staging directory exists and records it; NodePublishVolume of a
// volume that is not staged then fails with FailedPrecondition, as a real
// driver's would. NodeGetVolumeStats (advertised as GET_VOLUME_STATS when
// Options.VolumeStats is set) answers, for a volume published or staged
// at the path asked about, the usage SetUsage scripted. Every call is recorded as a Call; Fail makes a method
// return an error. A Driver is safe for concurrent use.
//
//	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
//	l, err := net.Listen("unix", sock)
//	go d.Serve(ctx, l) // returns when ctx ends, after the server stopped
package fakecsi
