package prometheus

import (
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
)

// podStartupBuckets are upstream's buckets of the pod startup histograms
// (kubelet_pod_start_duration_seconds, kubelet_pod_start_sli_duration_seconds,
// kubelet_pod_start_total_duration_seconds): 0.5s to an hour, round numbers
// roughly exponential.
var podStartupBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900,
	1200, 1800, 2700, 3600}

// imagePullBuckets are upstream's buckets of
// kubelet_image_pull_duration_seconds: 1s to an hour.
var imagePullBuckets = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// imageSizeBuckets are upstream's values of the image_size_in_bytes label:
// an image falls in the last bucket whose lower bound it exceeds.
var imageSizeBuckets = []struct {
	over  uint64
	label string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

// ImageSizeBucket is upstream's image_size_in_bytes label of
// kubelet_image_pull_duration_seconds for an image of size bytes: "N/A"
// for 0 (the runtime did not tell), else the range it falls in, each bound
// counted in the range below it ("0-10MB" for exactly 10MiB).
func ImageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(imageSizeBuckets) - 1; i >= 0; i-- {
		if size > imageSizeBuckets[i].over {
			return imageSizeBuckets[i].label
		}
	}
	return ""
}

// newPodStartAndPullMetrics makes the collectors of the pods' starts and
// the image pulls, under upstream's names, help texts, labels and buckets.
func (m *Metrics) newPodStartAndPullMetrics() {
	m.podStartTotal = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pod_start_total_duration_seconds",
		Help: alpha("Duration in seconds to start a pod since creation, including time to pull images and run init containers, " +
			"measured from pod creation timestamp to when all its containers are reported as started and observed via watch"),
		Buckets: podStartupBuckets})
	m.podStartSLI = prom.NewHistogram(prom.HistogramOpts{Name: "kubelet_pod_start_sli_duration_seconds",
		Help: alpha("Duration in seconds to start a pod, excluding time to pull images and run init containers, " +
			"measured from pod creation timestamp to when all its containers are reported as started and observed via watch"),
		Buckets: podStartupBuckets})
	m.imagePulls = prom.NewHistogramVec(prom.HistogramOpts{Name: "kubelet_image_pull_duration_seconds",
		Help: alpha("Duration in seconds to pull an image."), Buckets: imagePullBuckets}, []string{"image_size_in_bytes"})
}

// PodStartTotalDuration implements agent.PodStartMetrics:
// kubelet_pod_start_total_duration_seconds.
func (m *Metrics) PodStartTotalDuration(d time.Duration) { m.podStartTotal.Observe(d.Seconds()) }

// PodStartSLIDuration implements agent.PodStartMetrics:
// kubelet_pod_start_sli_duration_seconds.
func (m *Metrics) PodStartSLIDuration(d time.Duration) { m.podStartSLI.Observe(d.Seconds()) }

// ImagePulled implements agent.ImagePullMetrics:
// kubelet_image_pull_duration_seconds by image_size_in_bytes
// (ImageSizeBucket).
func (m *Metrics) ImagePulled(d time.Duration, size uint64) {
	m.imagePulls.WithLabelValues(ImageSizeBucket(size)).Observe(d.Seconds())
}
