package service

import "github.com/prometheus/client_golang/prometheus"

// WebhookStats are a notifier's counts (notify.Stats), read on scrape.
type WebhookStats struct {
	Delivered, Dropped, Failed uint64
	QueueLength                int
}

// RegisterWebhooks adds decant_webhook_events_total{result} and
// decant_webhook_queue_length, read from stats on every scrape.
func (r *Registry) RegisterWebhooks(stats func() WebhookStats) error {
	return r.Register(webhookCollector{stats: stats,
		events: prometheus.NewDesc("decant_webhook_events_total", "Webhook deliveries of an event to one receiver, by result.", []string{"result"}, nil),
		queue:  prometheus.NewDesc("decant_webhook_queue_length", "Webhook events waiting to be delivered, over all receivers.", nil, nil),
	})
}

type webhookCollector struct {
	stats         func() WebhookStats
	events, queue *prometheus.Desc
}

func (c webhookCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c webhookCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, r := range []struct {
		result string
		n      uint64
	}{{"delivered", s.Delivered}, {"dropped", s.Dropped}, {"failed", s.Failed}} {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(r.n), r.result)
	}
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(s.QueueLength))
}
