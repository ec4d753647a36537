package seatctl

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

var leaseStates = map[string]seatdv1.LeaseState{
	"active":   seatdv1.LeaseState_LEASE_STATE_ACTIVE,
	"released": seatdv1.LeaseState_LEASE_STATE_RELEASED,
	"expired":  seatdv1.LeaseState_LEASE_STATE_EXPIRED,
	"revoked":  seatdv1.LeaseState_LEASE_STATE_REVOKED,
}

func stateName(s seatdv1.LeaseState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "LEASE_STATE_"))
}

func leasesCmd(g *globals) *cobra.Command {
	return group("leases", "List a license's leases, revoke one", []string{"lease"},
		leaseListCmd(g), leaseRevokeCmd(g))
}

func leaseListCmd(g *globals) *cobra.Command {
	var state, feature string
	c := &cobra.Command{
		Use:               "ls LICENSE_ID [--state active|released|expired|revoked] [--feature F]",
		Aliases:           []string{"list"},
		Short:             "List a license's leases, newest first (every page): its base pool's and its feature grants'",
		Long:              "List a license's leases, newest first (every page): its base pool's and its feature grants'. LICENSE_ID may be a grant's id (LICENSE_ID.1a2b3c4d) for that grant's leases only; --feature keeps the leases of that feature's grants.",
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		RunE: func(c *cobra.Command, args []string) error {
			req := &seatdv1.ListLeasesRequest{LicenseId: args[0], TenantId: g.tenant, PageSize: pageSize, Feature: feature}
			if state != "" {
				s, ok := leaseStates[strings.ToLower(state)]
				if !ok {
					return usageErrorf("--state %q: want active, released, expired or revoked", state)
				}
				req.State = s
			}
			admin, ctx, cancel, err := g.admin(c)
			if err != nil {
				return err
			}
			defer cancel()
			var all []*seatdv1.Lease
			for {
				resp, err := admin.ListLeases(ctx, req)
				if err != nil {
					return err
				}
				all = append(all, resp.GetLeases()...)
				if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
					break
				}
			}
			if done, err := g.emit(&seatdv1.ListLeasesResponse{Leases: all}); done {
				return err
			}
			now := time.Now()
			t := newTable(g.stdout, "ID", "STATE", "BORROWED", "USER", "HOST", "FINGERPRINT", "FEATURE", "VERSION", "ACQUIRED", "LAST HEARTBEAT", "EXPIRES")
			for _, l := range all {
				expires := fmtUntil(l.GetExpiresAt(), now)
				if l.GetState() != seatdv1.LeaseState_LEASE_STATE_ACTIVE {
					expires = "ended " + fmtTime(l.GetEndedAt())
				}
				state := stateName(l.GetState())
				if l.GetLingering() && l.GetState() == seatdv1.LeaseState_LEASE_STATE_ACTIVE {
					state += " (lingering)" // released, its seat kept for its client: docs/concepts/policy.md
				}
				t.row(l.GetId(), state, yesNo(l.GetBorrowed()), l.GetUser(), l.GetHostname(), l.GetFingerprint(),
					l.GetFeature(), l.GetVersion(), fmtTime(l.GetAcquiredAt()), fmtTime(l.GetLastHeartbeatAt()), expires)
			}
			return t.flush()
		},
	}
	c.Flags().StringVar(&state, "state", "", "only leases in this state: active, released, expired or revoked (past-deadline leases are expired)")
	c.Flags().StringVar(&feature, "feature", "", "only the leases of this feature's grants (FEATURE is empty, -, for the base pool's)")
	_ = c.RegisterFlagCompletionFunc("state", cobra.FixedCompletions([]string{"active", "released", "expired", "revoked"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func leaseRevokeCmd(g *globals) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "revoke LEASE_ID [--reason TEXT]",
		Short: "End a lease now; its holder's next heartbeat fails (a borrowed lease cannot be revoked)",
		Args:  exactArgs("LEASE_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.RevokeLease, &seatdv1.RevokeLeaseRequest{LeaseId: args[0], TenantId: g.tenant, Reason: reason})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp.GetLease()); done {
				return err
			}
			l := resp.GetLease()
			_, err = fmt.Fprintf(g.stdout, "revoked %s (license %s, fingerprint %s)\n", l.GetId(), l.GetLicenseId(), l.GetFingerprint())
			return err
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, kept in the audit log")
	return c
}
