package vkprovider

import (
	"context"
	"fmt"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/server"
)

// GetStatsSummary implements nodeutil.Provider with agent.Summary: the
// node's and its pods' usage in the Summary API's types (/stats/summary).
func (p *Provider) GetStatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	return p.agent.API().Summary(ctx, false)
}

// GetMetricsResource implements nodeutil.Provider: upstream kubelet's
// /metrics/resource (what metrics-server scrapes), gathered from
// examples/prometheus's ResourceCollector over the agent's reduced
// summary, on a registry made for the call so that ctx bounds it.
func (p *Provider) GetMetricsResource(ctx context.Context) ([]*dto.MetricFamily, error) {
	c, err := prometheus.NewResourceCollector(summaryIn{ctx: ctx, stats: p.agent.API()}, prometheus.ResourceOptions{Logger: p.log})
	if err != nil {
		return nil, err
	}
	reg := prom.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("metrics resource: %w", err)
	}
	return reg.Gather()
}

// summaryIn is a StatsProvider whose summaries also end with ctx, the
// request's (the collector bounds them with a ctx of its own).
type summaryIn struct {
	ctx   context.Context
	stats server.StatsProvider
}

// Summary implements server.StatsProvider, ending with s.ctx too.
func (s summaryIn) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(s.ctx, cancel)()
	defer cancel()
	return s.stats.Summary(ctx, onlyCPUAndMemory)
}
