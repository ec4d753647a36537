package service

import (
	"fmt"

	"github.com/seatd/seatd/server"
)

// checkPrioritiesShape refuses priorities no license could take, naming
// the field (priorities[1].level): their number, each one's feature name,
// subject and level (server.MinPriorityLevel to MaxPriorityLevel). What
// needs the license and the groups (a feature it holds, a group that
// exists, no subject twice per feature) the store judges
// (server.Policy.Validate).
func checkPrioritiesShape(ps []server.Priority) error {
	if len(ps) > server.MaxPolicyRules {
		return server.Invalid("priorities", "must be at most %d entries", server.MaxPolicyRules)
	}
	for i, pr := range ps {
		f := fmt.Sprintf("priorities[%d]", i)
		if pr.Feature != "" {
			if err := server.CheckFeature(f+".feature", pr.Feature); err != nil {
				return err
			}
		}
		if err := checkSubjectShape(f+".subject", pr.Subject); err != nil {
			return err
		}
		if err := server.CheckPriorityLevel(f+".level", pr.Level); err != nil {
			return err
		}
	}
	return nil
}

// checkSubjectShape refuses a rule's or a priority's subject (field) of no
// kind or an unknown one, or with a name no subject of its kind may have.
func checkSubjectShape(field string, s server.Subject) error {
	switch s.Kind {
	case server.SubjectUser, server.SubjectHost, server.SubjectGroup, server.SubjectHostGroup:
	case "":
		return server.Invalid(field+".kind", "is required: user, host, group or host_group")
	default:
		return server.Invalid(field+".kind", "must be user, host, group or host_group (got %q)", s.Kind)
	}
	checkName := server.CheckPolicyName
	if s.Kind.IsGroup() {
		checkName = server.CheckGroupName // no '/'
	}
	return checkName(field+".name", s.Name)
}
