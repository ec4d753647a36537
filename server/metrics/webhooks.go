package metrics

import "time"

// Webhooks counts the deliverer's work (webhooks.Metrics).
type Webhooks struct{ M *Metrics }

func (w Webhooks) Attempt(result string, _ time.Duration) {
	w.M.WebhookAttempts.WithLabelValues(result).Inc()
}

func (w Webhooks) EndpointDisabled() { w.M.WebhookEndpointsDisabled.Inc() }
