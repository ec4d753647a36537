package server

// EndError is the error a call on a lease answers once the lease is in
// state s: ErrLeaseReleased, ErrLeaseRevoked, else ErrLeaseExpired. An
// active lease the store no longer holds a seat for counts as expired
// (Store.Heartbeat lists the errors).
func (s LeaseState) EndError() error {
	switch s {
	case LeaseReleased:
		return ErrLeaseReleased
	case LeaseRevoked:
		return ErrLeaseRevoked
	default:
		return ErrLeaseExpired
	}
}
