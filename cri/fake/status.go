package fake

import (
	"context"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// kubeAPIVersion is the Version field of VersionResponse, which every CRI
// runtime reports as "0.1.0".
const kubeAPIVersion = "0.1.0"

// Version implements cri.Versioner: the runtime name and version of
// Options, CRI API version "v1".
func (r *Runtime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	if err := r.enter(ctx, Version, &runtimeapi.VersionRequest{Version: apiVersion}); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{
		Version:           kubeAPIVersion,
		RuntimeName:       r.name,
		RuntimeVersion:    r.ver,
		RuntimeApiVersion: "v1",
	}, nil
}

// SetRuntimeReady sets the RuntimeReady condition that Status reports (true
// by default), with a reason and message when it is false.
func (r *Runtime) SetRuntimeReady(ready bool, reason, message string) {
	r.setCondition(0, ready, reason, message)
}

// SetNetworkReady sets the NetworkReady condition that Status reports (true
// by default), with a reason and message when it is false (containerd says
// "NetworkPluginNotReady", "cni plugin not initialized"). While it is
// false, RunPodSandbox fails for sandboxes that do not use the node's
// network, as containerd's does.
func (r *Runtime) SetNetworkReady(ready bool, reason, message string) {
	r.setCondition(1, ready, reason, message)
}

func (r *Runtime) setCondition(i int, status bool, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conditions[i] = &runtimeapi.RuntimeCondition{Type: r.conditions[i].Type, Status: status, Reason: reason, Message: message}
}

// Status implements cri.StatusReporter: the RuntimeReady and NetworkReady
// conditions, the default runtime handler, and, when verbose, an "info"
// entry naming the runtime.
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	if err := r.enter(ctx, Status, &runtimeapi.StatusRequest{Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			proto.CloneOf(r.conditions[0]), proto.CloneOf(r.conditions[1]),
		}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{}}},
		Features:        &runtimeapi.RuntimeFeatures{},
	}
	if verbose {
		resp.Info = map[string]string{"info": `{"runtime":"` + r.name + `","version":"` + r.ver + `"}`}
	}
	return resp, nil
}

// UpdateRuntimeConfig implements cri.StatusReporter: the config is kept,
// and LastRuntimeConfig returns it. It changes nothing else (the pod CIDR
// does not move the sandboxes' IP range).
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	if err := r.enter(ctx, UpdateRuntimeConfig, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: config}); err != nil {
		return err
	}
	config = proto.CloneOf(config)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runtimeCfg = config
	return nil
}

// LastRuntimeConfig returns a copy of the config of the last
// UpdateRuntimeConfig, or nil.
func (r *Runtime) LastRuntimeConfig() *runtimeapi.RuntimeConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return proto.CloneOf(r.runtimeCfg)
}

// SetCgroupDriver sets the cgroup driver RuntimeConfig reports (CGROUPFS by
// default).
func (r *Runtime) SetCgroupDriver(d runtimeapi.CgroupDriver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cgroupDrv = d
}

// RuntimeConfig implements cri.StatusReporter: the cgroup driver.
func (r *Runtime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	if err := r.enter(ctx, RuntimeConfig, &runtimeapi.RuntimeConfigRequest{}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: r.cgroupDrv}}, nil
}
