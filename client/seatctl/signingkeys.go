package seatctl

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func signingKeysCmd(g *globals) *cobra.Command {
	list := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's lease-signing keys (public halves): the next key, the one that signs, retired ones",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.ListSigningKeys, &seatdv1.ListSigningKeysRequest{TenantId: g.tenant})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			return g.printSigningKeys(resp.GetSigningKeys()...)
		},
	}
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Sign lease certificates with the next key from now on, and make a new next key",
		Long: `rotate retires the key that signs lease certificates, makes the tenant's
next key the one that signs (every instance within a few seconds) and makes
a new next key. The next key has been in the JWKS since the rotation before,
so every product built with a JWKS fetched since then keeps verifying; a
product whose JWKS is older than that refuses the certificates it signs
(its kept leases are lost at their next heartbeat) until it ships a JWKS
printed later (seatctl jwks). The retired key stays in the JWKS until every
certificate it signed has expired.`,
		Args: exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.RotateSigningKey, &seatdv1.RotateSigningKeyRequest{TenantId: g.tenant})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp.GetSigningKey()); done {
				return err
			}
			return g.printSigningKeys(resp.GetSigningKey())
		},
	}
	return group("signing-keys", "List and rotate the keys that sign lease certificates", []string{"signing-key", "sk"}, list, rotate)
}

// printSigningKeys prints signing keys as a table.
func (g *globals) printSigningKeys(keys ...*seatdv1.SigningKey) error {
	t := newTable(g.stdout, "KID", "STATE", "CREATED", "RETIRED", "PUBLISHED UNTIL")
	for _, k := range keys {
		state := "?"
		switch k.GetState() {
		case seatdv1.SigningKeyState_SIGNING_KEY_STATE_SIGNING:
			state = "signing"
		case seatdv1.SigningKeyState_SIGNING_KEY_STATE_NEXT:
			state = "next"
		case seatdv1.SigningKeyState_SIGNING_KEY_STATE_RETIRED:
			state = "retired"
		}
		t.row(k.GetKid(), state, fmtTime(k.GetCreateTime()), fmtTime(k.GetRetireTime()), fmtTime(k.GetPublishUntil()))
	}
	return t.flush()
}

func jwksCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "jwks [--tenant ID]",
		Short: "Print the tenant's public keys as a JWKS, to embed in a product (no key needed)",
		Long: `jwks prints the JWKS that verifies the tenant's lease certificates
(GetSigningKeys; the same as GET /v1/tenants/{tenant_id}/jwks.json), as JSON
(-o yaml: YAML). Embed it in the product at build time and give it to
the clients (Go: client.ParseSigningKeys for Options.SigningKeys, and VerifyOffline). It needs no key: the keys are public.`,
		Example: "  seatctl jwks --tenant acme > acme-jwks.json",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			conn, err := g.dial()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context(), g.timeout)
			defer cancel()
			resp, err := seatdv1.NewSeatServiceClient(conn).GetSigningKeys(ctx, &seatdv1.GetSigningKeysRequest{TenantId: g.tenant})
			if err != nil {
				return err
			}
			jwks, err := client.JWKS(resp)
			if err != nil {
				return err
			}
			if g.output == "yaml" {
				return g.write(jwks)
			}
			_, err = fmt.Fprintf(g.stdout, "%s\n", jwks)
			return err
		},
	}
}
