package metrics

import "github.com/prometheus/client_golang/prometheus"

// Network counts what clients hold open (streams, connections) and what
// the limits on them refused (docs/guides/tls.md). A nil
// *Network counts nothing.
type Network struct {
	StreamsOpen     prometheus.Gauge       // seatd streams open (heartbeat streams, waits)
	StreamMetadata  prometheus.Gauge       // bytes of request metadata the open streams hold
	StreamsRefused  *prometheus.CounterVec // limit: instance, address
	StreamsEnded    *prometheus.CounterVec // reason: lease_ended, idle
	ConnectionsOpen *prometheus.GaugeVec   // listener: grpc, http
	ConnectionsShed *prometheus.CounterVec // listener: closed at once, their address at --max-connections-per-address
	Limits          *prometheus.GaugeVec   // limit: the configured bounds, for alerts on open / limit
}

// NewNetwork creates the network collectors and registers them with reg.
func NewNetwork(reg prometheus.Registerer) *Network {
	n := &Network{
		StreamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_streams_open", Help: "seatd streams open on this instance (heartbeat streams and waits), against --max-streams.",
		}),
		StreamMetadata: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_stream_metadata_bytes", Help: "Bytes of request metadata (gRPC headers) held by the open seatd streams; each is at most --grpc-max-header-bytes.",
		}),
		StreamsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_streams_refused_total", Help: "Streams refused with TOO_MANY_STREAMS, by the limit reached: instance (--max-streams) or address (--max-streams-per-address).",
		}, []string{"limit"}),
		StreamsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_streams_ended_total", Help: "Heartbeat streams the server ended on its own, by reason: lease_ended (its lease expired, was released or revoked while it was silent) or idle (--stream-idle-timeout).",
		}, []string{"reason"}),
		ConnectionsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seatd_connections_open", Help: "Client connections open, by listener (grpc, http), against --max-connections.",
		}, []string{"listener"}),
		ConnectionsShed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_connections_refused_total", Help: "Connections closed as soon as accepted because their client address already had --max-connections-per-address open, by listener.",
		}, []string{"listener"}),
		Limits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seatd_network_limit", Help: "The configured network limits, by name (the flag without its dashes), e.g. max_connections after any lowering to fit the file descriptor limit.",
		}, []string{"limit"}),
	}
	reg.MustRegister(n.StreamsOpen, n.StreamMetadata, n.StreamsRefused, n.StreamsEnded, n.ConnectionsOpen, n.ConnectionsShed, n.Limits)
	return n
}

// DiscardNetwork returns network metrics registered nowhere, for tests.
func DiscardNetwork() *Network { return NewNetwork(prometheus.NewRegistry()) }
