package seatctl

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Groups of users or hosts (FlexNet GROUP, HOST_GROUP) are the tenant's,
// shared by the site policies of its licenses.

func groupsCmd(g *globals) *cobra.Command {
	return group("groups", "Groups of users or of hosts that site policies name (tenant-wide: FlexNet GROUP, HOST_GROUP)", []string{"group"},
		groupListCmd(g), groupPutCmd(g), groupDeleteCmd(g))
}

func groupListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tenant's groups by name, with their members",
		Args:    exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.ListGroups, &seatdv1.ListGroupsRequest{TenantId: g.tenant})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			t := newTable(g.stdout, "NAME", "KIND", "MEMBERS", "UPDATED")
			for _, gr := range resp.GetGroups() {
				t.row(gr.GetName(), groupKindLabel(gr.GetKind()), membersLabel(gr.GetMembers()), fmtTime(gr.GetUpdateTime()))
			}
			if len(resp.GetGroups()) == 0 {
				t.row("(no groups)")
			}
			return t.flush()
		},
	}
}

func groupPutCmd(g *globals) *cobra.Command {
	var users, hosts []string
	c := &cobra.Command{
		Use:   "put NAME --users a,b | --hosts h1,h2",
		Short: "Create a group of users (--users) or of hosts (--hosts), or replace its members",
		Long: `Create a group of users (--users) or of hosts (--hosts), or replace the
members of the group of that name. Groups are the tenant's: every license
policy naming it judges by its new members from its next acquisition on
(no lease ends). Users compare exactly, hosts without case.`,
		Args:    exactArgs("NAME"),
		Example: "  seatctl groups put night --users alice,bob,carol\n  seatctl groups put farm --hosts node01,node02",
		RunE: func(c *cobra.Command, args []string) error {
			gr := &seatdv1.IdentityGroup{Name: args[0]}
			switch {
			case c.Flags().Changed("users") == c.Flags().Changed("hosts"):
				return usageErrorf("give one of --users or --hosts")
			case c.Flags().Changed("users"):
				gr.Kind, gr.Members = seatdv1.IdentityGroup_KIND_USERS, users
			default:
				gr.Kind, gr.Members = seatdv1.IdentityGroup_KIND_HOSTS, hosts
			}
			if len(gr.Members) == 0 {
				return usageErrorf("a group needs at least one member")
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.PutGroup, &seatdv1.PutGroupRequest{Group: gr, TenantId: g.tenant})
			if err != nil {
				return err
			}
			return g.printGroup(resp.GetGroup())
		},
	}
	c.Flags().StringSliceVar(&users, "users", nil, "the group's users, comma-separated (a group of users)")
	c.Flags().StringSliceVar(&hosts, "hosts", nil, "the group's host names, comma-separated (a group of hosts)")
	return c
}

func groupDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"delete"},
		Short:   "Delete a group no policy names (GROUP_IN_USE names the licenses whose policies do)",
		Args:    exactArgs("NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.DeleteGroup, &seatdv1.DeleteGroupRequest{Name: args[0], TenantId: g.tenant})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "deleted group %s\n", args[0])
			return err
		},
	}
}

// printGroup prints one group: -o json/yaml the IdentityGroup itself, else
// one field per line.
func (g *globals) printGroup(gr *seatdv1.IdentityGroup) error {
	if done, err := g.emit(gr); done {
		return err
	}
	t := newTable(g.stdout, "FIELD", "VALUE")
	t.row("name", gr.GetName())
	t.row("kind", groupKindLabel(gr.GetKind()))
	t.row("members", strings.Join(gr.GetMembers(), ", "))
	t.row("created", fmtTime(gr.GetCreateTime()))
	t.row("updated", fmtTime(gr.GetUpdateTime()))
	return t.flush()
}

func groupKindLabel(k seatdv1.IdentityGroup_Kind) string {
	if k == seatdv1.IdentityGroup_KIND_HOSTS {
		return "hosts"
	}
	return "users"
}

// membersLabel lists a few members and how many more.
func membersLabel(members []string) string {
	const shown = 5
	if len(members) <= shown {
		return strings.Join(members, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(members[:shown], ", "), len(members)-shown)
}
