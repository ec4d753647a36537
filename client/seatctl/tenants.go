package seatctl

import (
	"fmt"

	"github.com/spf13/cobra"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func tenantsCmd(g *globals) *cobra.Command {
	var id, name string
	create := &cobra.Command{
		Use:   "create --name NAME [--id ID]",
		Short: "Create a tenant (operator key)",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.CreateTenant, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: id, Name: name}})
			if err != nil {
				return err
			}
			return g.printTenants(resp.GetTenant())
		},
	}
	create.Flags().StringVar(&id, "id", "", "lowercase letters, digits and dashes (default: generated)")
	create.Flags().StringVar(&name, "name", "", "human name")
	list := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List tenants with their quotas (operator key; every page)",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			all, err := g.allTenants(c)
			if err != nil {
				return err
			}
			if done, err := g.emit(&seatdv1.ListTenantsResponse{Tenants: all}); done {
				return err
			}
			return g.printTenants(all...)
		},
	}
	return group("tenants", "Create and list tenants (operator key)", []string{"tenant"}, create, list)
}

func (g *globals) allTenants(c *cobra.Command) ([]*seatdv1.Tenant, error) {
	admin, ctx, cancel, err := g.admin(c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var all []*seatdv1.Tenant
	req := &seatdv1.ListTenantsRequest{PageSize: pageSize}
	for {
		resp, err := admin.ListTenants(ctx, req)
		if err != nil {
			return nil, err
		}
		all = append(all, resp.GetTenants()...)
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			return all, nil
		}
	}
}

// printTenants prints one tenant (json/yaml: the Tenant) or a table.
func (g *globals) printTenants(ts ...*seatdv1.Tenant) error {
	if len(ts) == 1 {
		if done, err := g.emit(ts[0]); done {
			return err
		}
	}
	quota := func(n int64) string {
		if n == 0 {
			return "none"
		}
		return fmt.Sprint(n)
	}
	t := newTable(g.stdout, "ID", "NAME", "CREATED", "MAX LICENSES", "MAX SEATS", "MAX API KEYS")
	for _, tn := range ts {
		q := tn.GetQuotas()
		t.row(tn.GetId(), tn.GetName(), fmtTime(tn.GetCreateTime()), quota(q.GetMaxLicenses()), quota(q.GetMaxSeats()), quota(q.GetMaxApiKeys()))
	}
	return t.flush()
}

func completeTenants(g *globals) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		all, err := g.allTenants(c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out := make([]cobra.Completion, 0, len(all))
		for _, t := range all {
			out = append(out, cobra.CompletionWithDesc(t.GetId(), t.GetName()))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func apikeysCmd(g *globals) *cobra.Command {
	var name, role string
	create := &cobra.Command{
		Use:               "create TENANT_ID --name NAME [--role viewer|manager|admin]",
		Short:             "Create an API key for a tenant with a role; prints its secret, shown only this once",
		Args:              exactArgs("TENANT_ID"),
		ValidArgsFunction: completeTenants(g),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.CreateApiKey, &seatdv1.CreateApiKeyRequest{TenantId: args[0], Name: name, Role: role})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			if err := g.printAPIKeys(resp.GetApiKey()); err != nil {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "\nsecret (shown only this once): %s\n", resp.GetSecret())
			return err
		},
	}
	create.Flags().StringVar(&name, "name", "", "what the key is for")
	create.Flags().StringVar(&role, "role", "admin", "what the key may do in its tenant: viewer (read licenses, leases, reports), manager (+ revoke leases, edit site policies and groups) or admin (+ licenses, grants, API keys, signing keys, the audit log)")
	_ = create.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]cobra.Completion{"viewer", "manager", "admin"}, cobra.ShellCompDirectiveNoFileComp))
	list := &cobra.Command{
		Use:               "ls TENANT_ID",
		Aliases:           []string{"list"},
		Short:             "List a tenant's API keys, revoked ones too (every page)",
		Args:              exactArgs("TENANT_ID"),
		ValidArgsFunction: completeTenants(g),
		RunE: func(c *cobra.Command, args []string) error {
			admin, ctx, cancel, err := g.admin(c)
			if err != nil {
				return err
			}
			defer cancel()
			var all []*seatdv1.ApiKey
			req := &seatdv1.ListApiKeysRequest{TenantId: args[0], PageSize: pageSize}
			for {
				resp, err := admin.ListApiKeys(ctx, req)
				if err != nil {
					return err
				}
				all = append(all, resp.GetApiKeys()...)
				if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
					break
				}
			}
			if done, err := g.emit(&seatdv1.ListApiKeysResponse{ApiKeys: all}); done {
				return err
			}
			return g.printAPIKeys(all...)
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke API_KEY_ID",
		Short: "Revoke an API key; it stops working at once",
		Args:  exactArgs("API_KEY_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.RevokeApiKey, &seatdv1.RevokeApiKeyRequest{ApiKeyId: args[0]})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp.GetApiKey()); done {
				return err
			}
			return g.printAPIKeys(resp.GetApiKey())
		},
	}
	return group("apikeys", "Create, list and revoke tenants' API keys (operator key, or a tenant's admin for its own)", []string{"apikey", "api-keys", "keys"}, create, list, revoke)
}

func (g *globals) printAPIKeys(keys ...*seatdv1.ApiKey) error {
	t := newTable(g.stdout, "ID", "TENANT", "NAME", "ROLE", "CREATED", "REVOKED")
	for _, k := range keys {
		t.row(k.GetId(), k.GetTenantId(), k.GetName(), k.GetRole(), fmtTime(k.GetCreateTime()), fmtTime(k.GetRevokeTime()))
	}
	return t.flush()
}
