package seatctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/flexopts"
)

// Site policies (docs/concepts/policy.md): who may take a license's seats.
// `policy import` reads a FlexNet options file with server/flexopts, the
// reader seatd's own tests hold to Revenera's syntax, and validates what
// it makes with the server's own rules before it writes anything.

func policyCmd(g *globals) *cobra.Command {
	return group("policy", "Site policy: who may take a license's seats (reserve, max, include, exclude; FlexNet options files)", []string{"policies"},
		policyGetCmd(g), policySetCmd(g), policyImportCmd(g))
}

func policyGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "get LICENSE_ID",
		Short:             "Show a license's site policy, rule by rule, and its priorities (-o json: the LicensePolicy, the input of policy set)",
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		RunE: func(c *cobra.Command, args []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetLicensePolicy, &seatdv1.GetLicensePolicyRequest{LicenseId: args[0], TenantId: g.tenant})
			if err != nil {
				return err
			}
			return g.printPolicy(resp.GetPolicy())
		},
	}
}

func policySetCmd(g *globals) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "set LICENSE_ID -f POLICY.json",
		Short: "Replace a license's site policy with a LicensePolicy JSON document (as policy get -o json prints it; {} removes it)",
		Long: `Replace a license's site policy with the LicensePolicy in a JSON file (- reads
standard input): the document policy get -o json prints, field names as in
the API (rules[].kind KIND_RESERVE, KIND_MAX, KIND_INCLUDE or KIND_EXCLUDE;
subject.kind KIND_USER, KIND_HOST, KIND_GROUP or KIND_HOST_GROUP;
priorities[] of feature, subject and level, -1000 to 1000, the order of
WaitForSeat's queue). It is validated as a whole: a refusal names the rule
and field and changes nothing. No lease ends; the policy judges the next
acquisitions, and its priorities order the waiters that join after it. An
empty document ({}: no rules, no priorities) removes the policy.`,
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		Example: `  seatctl policy get lic_123 -o json > policy.json   # edit, then
  seatctl policy set lic_123 -f policy.json
  echo '{"rules": [{"kind": "KIND_EXCLUDE", "subject": {"kind": "KIND_USER", "name": "intern"}}]}' | seatctl policy set lic_123 -f -
  echo '{"priorities": [{"subject": {"kind": "KIND_GROUP", "name": "designers"}, "level": 10}]}' | seatctl policy set lic_123 -f -`,
		RunE: func(c *cobra.Command, args []string) error {
			data, err := readFileOrStdin(c, file)
			if err != nil {
				return err
			}
			p := &seatdv1.LicensePolicy{}
			if err := protojson.Unmarshal(data, p); err != nil {
				return usageErrorf("%s: not a LicensePolicy JSON document: %v", inputName(file), err)
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.SetLicensePolicy, &seatdv1.SetLicensePolicyRequest{
				LicenseId: args[0], Policy: p, TenantId: g.tenant,
			})
			if err != nil {
				return err
			}
			return g.printPolicy(resp.GetPolicy())
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the LicensePolicy JSON file (- for standard input)")
	_ = c.MarkFlagRequired("file")
	return c
}

// readFileOrStdin reads the file named by -f, or standard input for "-".
func readFileOrStdin(c *cobra.Command, file string) ([]byte, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(c.InOrStdin())
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, usageErrorf("-f: %v", err)
	}
	return data, nil
}

func inputName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// printPolicy prints a policy: -o json/yaml the LicensePolicy itself, else
// a line about it and a table of its rules, then one of its priorities.
func (g *globals) printPolicy(p *seatdv1.LicensePolicy) error {
	if done, err := g.emit(p); done {
		return err
	}
	if len(p.GetRules()) == 0 && len(p.GetPriorities()) == 0 {
		_, err := fmt.Fprintf(g.stdout, "license %s has no site policy: any client may take any free seat\n", p.GetLicenseId())
		return err
	}
	fmt.Fprintf(g.stdout, "site policy of license %s, set %s: %d rule(s)%s\n", p.GetLicenseId(), fmtTime(p.GetUpdateTime()), len(p.GetRules()), priorityCount(p))
	if len(p.GetRules()) > 0 {
		t := newTable(g.stdout, "#", "RULE", "POOL", "COUNT", "SUBJECT", "MEANS")
		for i, r := range p.GetRules() {
			count := ""
			if r.GetCount() > 0 {
				count = fmt.Sprint(r.GetCount())
			}
			t.row(fmt.Sprint(i), ruleWord(r.GetKind()), poolLabel(r.GetFeature()), count, subjectLabel(r.GetSubject(), r.GetEachMember()), ruleMeaning(r))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return g.printPriorities(p)
}

// priorityCount is ", 2 priorities" for the line about a policy ("" for
// none).
func priorityCount(p *seatdv1.LicensePolicy) string {
	switch n := len(p.GetPriorities()); n {
	case 0:
		return ""
	case 1:
		return ", 1 priority"
	default:
		return fmt.Sprintf(", %d priorities", n)
	}
}

// printPriorities prints a table of the policy's priorities (nothing for
// none): the order of WaitForSeat's queue.
func (g *globals) printPriorities(p *seatdv1.LicensePolicy) error {
	if len(p.GetPriorities()) == 0 {
		return nil
	}
	fmt.Fprintln(g.stdout, "waiters for a seat (WaitForSeat) are served by level, highest first; a waiter no priority names is at level 0:")
	t := newTable(g.stdout, "#", "LEVEL", "POOL", "SUBJECT")
	for i, pr := range p.GetPriorities() {
		t.row(fmt.Sprint(i), fmt.Sprint(pr.GetLevel()), poolLabel(pr.GetFeature()), subjectLabel(pr.GetSubject(), false))
	}
	return t.flush()
}

func ruleWord(k seatdv1.PolicyRule_Kind) string {
	return strings.ToLower(strings.TrimPrefix(k.String(), "KIND_"))
}

// poolLabel names the pool a rule is of: "base" or "feature render".
func poolLabel(feature string) string {
	if feature == "" {
		return "base"
	}
	return "feature " + feature
}

func subjectLabel(s *seatdv1.PolicySubject, each bool) string {
	kind := strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "KIND_"))
	kind = strings.ReplaceAll(kind, "_", " ")
	out := kind + " " + s.GetName()
	if each {
		out += " (each member)"
	}
	return out
}

// ruleMeaning says in words what a rule does (docs/concepts/policy.md).
func ruleMeaning(r *seatdv1.PolicyRule) string {
	who := subjectLabel(r.GetSubject(), false)
	switch r.GetKind() {
	case seatdv1.PolicyRule_KIND_RESERVE:
		return fmt.Sprintf("%d seat(s) kept for %s", r.GetCount(), who)
	case seatdv1.PolicyRule_KIND_MAX:
		if r.GetEachMember() {
			return fmt.Sprintf("each member of %s holds at most %d", who, r.GetCount())
		}
		return fmt.Sprintf("%s holds at most %d", who, r.GetCount())
	case seatdv1.PolicyRule_KIND_INCLUDE:
		return "only the included may take it; " + who + " is"
	case seatdv1.PolicyRule_KIND_EXCLUDE:
		return who + " is refused"
	}
	return ""
}

func policyImportCmd(g *globals) *cobra.Command {
	var (
		file        string
		baseFeature string
		dryRun      bool
	)
	c := &cobra.Command{
		Use:   "import LICENSE_ID -f OPTIONS.opt [--base-feature NAME] [--dry-run]",
		Short: "Set a license's site policy from a FlexNet options file: its groups put, then the policy set",
		Long: `Read a FlexNet options file (a vendor daemon's .opt: RESERVE, MAX, INCLUDE,
EXCLUDE, INCLUDEALL, EXCLUDEALL, GROUP, HOST_GROUP) for a license, print
every line it could not map (or maps otherwise than written) and why, and
what it will do; then put the groups the rules name (tenant-wide: a group
of that name is replaced, for every policy naming it; one of the other
kind is refused) and set the policy, which replaces the license's. Feature names are the license's grants'
features; --base-feature names the FlexNet feature that stands for the
license's own seats. The result is validated before anything is written:
a refusal changes nothing. --dry-run prints and validates only.`,
		Args:              exactArgs("LICENSE_ID"),
		ValidArgsFunction: g.completeLicenses,
		Example: `  seatctl policy import lic_123 -f acme.opt --base-feature cadsuite --dry-run
  seatctl policy import lic_123 -f acme.opt --base-feature cadsuite`,
		RunE: func(c *cobra.Command, args []string) error {
			data, err := readFileOrStdin(c, file)
			if err != nil {
				return err
			}
			lic, err := call(g, c, seatdv1.AdminServiceClient.GetLicense, &seatdv1.GetLicenseRequest{LicenseId: args[0], TenantId: g.tenant})
			if err != nil {
				return err
			}
			existing, err := call(g, c, seatdv1.AdminServiceClient.ListGroups, &seatdv1.ListGroupsRequest{TenantId: g.tenant})
			if err != nil {
				return err
			}
			namedBy := func(group string) []string { return g.policiesNaming(c, group) }
			plan, err := planImport(lic.GetLicense(), existing.GetGroups(), data, inputName(file), flexopts.Options{BaseFeature: baseFeature}, namedBy)
			if err != nil {
				return err
			}
			if g.output == "table" {
				if err := plan.print(g.stdout, dryRun); err != nil {
					return err
				}
			}
			if plan.invalid != nil {
				return plan.invalid
			}
			if len(plan.policy.GetRules()) == 0 {
				return usageErrorf("%s: no rule could be mapped: nothing to set (the license's policy is left as it is; policy set with {} removes it)", inputName(file))
			}
			if dryRun {
				if _, err := g.emitJSON(plan.view(true)); err != nil {
					return err
				}
				return nil
			}
			// Everything a check could know was checked above; what fails
			// now (a change made meanwhile, a limit of the server) says
			// what was done before it.
			var put []string
			stopped := func(err error) error {
				if len(put) == 0 {
					return err
				}
				return fmt.Errorf("import stopped after putting %s; the policy was not set: %w", strings.Join(put, ", "), err)
			}
			for _, gr := range plan.puts {
				if _, err := call(g, c, seatdv1.AdminServiceClient.PutGroup, &seatdv1.PutGroupRequest{Group: gr, TenantId: g.tenant}); err != nil {
					return stopped(err)
				}
				put = append(put, groupKindWord(gr.GetKind())+" "+gr.GetName())
				if g.output == "table" {
					fmt.Fprintf(g.stdout, "put %s %s\n", groupKindWord(gr.GetKind()), gr.GetName())
				}
			}
			resp, err := call(g, c, seatdv1.AdminServiceClient.SetLicensePolicy, &seatdv1.SetLicensePolicyRequest{
				LicenseId: args[0], Policy: plan.policy, TenantId: g.tenant,
			})
			if err != nil {
				return stopped(err)
			}
			if done, err := g.emitJSON(plan.view(false)); done {
				return err
			}
			_, err = fmt.Fprintf(g.stdout, "set the site policy of license %s: %d rule(s)\n", resp.GetPolicy().GetLicenseId(), len(resp.GetPolicy().GetRules()))
			return err
		},
	}
	f := c.Flags()
	f.StringVarP(&file, "file", "f", "", "the options file (- for standard input)")
	f.StringVar(&baseFeature, "base-feature", "", "the FlexNet feature name that stands for the license's own seats (its base pool)")
	f.BoolVar(&dryRun, "dry-run", false, "print what it would do and validate it; change nothing")
	_ = c.MarkFlagRequired("file")
	return c
}

// importPlan is what policy import makes of a file: the notes, the groups
// to put (those the rules name that are new or changed: the new ones
// first, which no policy names yet, so that a put that fails has changed
// no license), the policy, and why it must not be done (nil: it may).
type importPlan struct {
	file      string
	license   string
	notes     []flexopts.Note
	puts      []*seatdv1.IdentityGroup
	unchanged []*seatdv1.IdentityGroup // groups the rules name, already as the file has them
	replaced  map[string]*seatdv1.IdentityGroup
	policy    *seatdv1.LicensePolicy
	invalid   error
}

// planImport parses the options file for lic and validates the result
// with the server's rules against the tenant's groups as they will be. It
// refuses what would leave the groups changed and the policy not set: a
// group of the tenant whose kind the file changes (namedBy, which may be
// nil, names the licenses whose policies name it), more groups than a
// tenant may have.
func planImport(lic *seatdv1.License, tenantGroups []*seatdv1.IdentityGroup, data []byte, file string, opts flexopts.Options, namedBy func(group string) []string) (*importPlan, error) {
	l := licenseForPolicy(lic)
	res, err := flexopts.Parse(strings.NewReader(string(data)), l, opts)
	if err != nil {
		return nil, usageErrorf("%s: %v", file, err)
	}
	plan := &importPlan{file: file, license: lic.GetId(), notes: res.Notes, replaced: map[string]*seatdv1.IdentityGroup{}}
	// What the reader mapped but import leaves out is noted too, after
	// the file's lines (Line 0: no one line).
	for _, lg := range res.Policy.Linger {
		plan.notes = append(plan.notes, flexopts.Note{
			Text:   fmt.Sprintf("LINGER of the %s pool, %s", poolLabel(lg.Feature), shortDuration(lg.Duration)),
			Reason: "not set: seatd does not hold released seats yet",
		})
	}
	groups := map[string]server.Group{}
	current := map[string]*seatdv1.IdentityGroup{}
	for _, gr := range tenantGroups {
		current[gr.GetName()] = gr
		groups[gr.GetName()] = server.Group{Name: gr.GetName(), Kind: groupKindOf(gr.GetKind()), Members: gr.GetMembers()}
	}
	named := map[string]bool{}
	for _, r := range res.Policy.Rules {
		if r.Subject.Kind.IsGroup() {
			named[r.Subject.Name] = true
		}
	}
	var (
		fresh, replaced []*seatdv1.IdentityGroup
		kindChange      error // refused before anything else: no check of seatd's would say it
	)
	for i, gr := range res.Groups {
		if !named[gr.Name] {
			plan.notes = append(plan.notes, flexopts.Note{Text: groupKindWord(groupKindProto(gr.Kind)) + " " + gr.Name, Reason: "not put: no rule names it"})
			continue
		}
		if err := gr.Validate(fmt.Sprintf("groups[%d]", i)); err != nil && plan.invalid == nil {
			plan.invalid = err
		}
		groups[gr.Name] = gr
		want := &seatdv1.IdentityGroup{Name: gr.Name, Kind: groupKindProto(gr.Kind), Members: gr.Members}
		old, ok := current[gr.Name]
		if !ok {
			fresh = append(fresh, want)
			continue
		}
		if old.GetKind() == want.GetKind() && slices.Equal(old.GetMembers(), want.GetMembers()) {
			plan.unchanged = append(plan.unchanged, want)
			continue
		}
		if old.GetKind() != want.GetKind() && kindChange == nil {
			kindChange = kindChangeRefused(file, old, want, namedBy)
		}
		plan.replaced[gr.Name] = old
		replaced = append(replaced, want)
	}
	plan.puts = append(fresh, replaced...)
	if n := len(current) + len(fresh); n > server.MaxTenantGroups && plan.invalid == nil {
		plan.invalid = server.Invalid("groups", "the tenant would have %d groups, more than the %d it may have", n, server.MaxTenantGroups)
	}
	rules := slices.Clone(res.Policy.Rules)
	if err := (&server.Policy{Rules: rules}).Validate(l, groups); err != nil && plan.invalid == nil {
		plan.invalid = err
	}
	plan.policy = &seatdv1.LicensePolicy{}
	for _, r := range rules {
		plan.policy.Rules = append(plan.policy.Rules, &seatdv1.PolicyRule{
			Kind: ruleKindProto(r.Kind), Feature: r.Feature, Count: int32(r.Count),
			Subject:    &seatdv1.PolicySubject{Kind: subjectKindProto(r.Subject.Kind), Name: r.Subject.Name},
			EachMember: r.EachMember,
		})
	}
	switch {
	case kindChange != nil:
		plan.invalid = kindChange
	case plan.invalid != nil:
		plan.invalid = refusedImport(file, plan.invalid)
	}
	return plan, nil
}

// kindChangeRefused refuses to change the kind of the tenant's group old
// into want's. seatd itself refuses it only while a policy names the group,
// and then only when import has already put the groups before it: import
// never does it, naming the licenses whose policies name the group when
// namedBy can read them.
func kindChangeRefused(file string, old, want *seatdv1.IdentityGroup, namedBy func(string) []string) error {
	why := fmt.Sprintf("%s: the tenant's %s %s would become a %s: import never changes a group's kind", file,
		groupKindWord(old.GetKind()), old.GetName(), groupKindWord(want.GetKind()))
	if namedBy != nil {
		if ids := namedBy(old.GetName()); len(ids) > 0 {
			why += fmt.Sprintf(", and the policy of license %s names it as a %s", strings.Join(ids, ", "), groupKindWord(old.GetKind()))
		}
	}
	return usageErrorf("%s; give the file's group another name (or change the tenant's with seatctl groups first); nothing changed", why)
}

// policiesNaming lists the licenses of the tenant whose policy names the
// group, reading each license's policy (on the way to a refusal only);
// nil when they cannot be read, as with a key that may not.
func (g *globals) policiesNaming(c *cobra.Command, group string) []string {
	lics, err := g.allLicenses(c)
	if err != nil {
		return nil
	}
	var ids []string
	for _, l := range lics {
		resp, err := call(g, c, seatdv1.AdminServiceClient.GetLicensePolicy, &seatdv1.GetLicensePolicyRequest{LicenseId: l.GetId(), TenantId: g.tenant})
		if err != nil {
			return nil
		}
		if slices.ContainsFunc(resp.GetPolicy().GetRules(), func(r *seatdv1.PolicyRule) bool {
			k := r.GetSubject().GetKind()
			return (k == seatdv1.PolicySubject_KIND_GROUP || k == seatdv1.PolicySubject_KIND_HOST_GROUP) && r.GetSubject().GetName() == group
		}) {
			ids = append(ids, l.GetId())
		}
	}
	return ids
}

// refusedImport is a policy or group the server would refuse, as a usage
// error naming the field as the server's refusal would.
func refusedImport(file string, err error) error {
	var se *server.Error
	if errors.As(err, &se) {
		what := se.Message
		if se.Field != "" {
			what = se.Field + ": " + what
		}
		return usageErrorf("%s: seatd would refuse this (%s); nothing changed", file, what)
	}
	return usageErrorf("%s: %v; nothing changed", file, err)
}

// print writes the plan for people: the lines not mapped, one by one,
// then what import does (or would do, with --dry-run).
func (p *importPlan) print(w io.Writer, dryRun bool) error {
	if len(p.notes) > 0 {
		fmt.Fprintf(w, "%s: not mapped as written:\n", p.file)
	}
	for _, n := range p.notes {
		if n.Line > 0 {
			fmt.Fprintf(w, "  line %d: %s\n      %s\n", n.Line, n.Text, n.Reason)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", n.Text, n.Reason)
		}
	}
	switch {
	case dryRun:
		fmt.Fprintf(w, "would do on license %s (dry run):\n", p.license)
	case p.invalid != nil:
		fmt.Fprintf(w, "would do on license %s:\n", p.license)
	default:
		fmt.Fprintf(w, "to do on license %s:\n", p.license)
	}
	for _, gr := range p.puts {
		what := "new"
		if old, ok := p.replaced[gr.GetName()]; ok {
			what = fmt.Sprintf("replaces %s %s (%s): every policy naming it follows", groupKindWord(old.GetKind()), old.GetName(), strings.Join(old.GetMembers(), ", "))
			if old.GetKind() != gr.GetKind() {
				what = fmt.Sprintf("refused: the tenant's %s %s is of the other kind", groupKindWord(old.GetKind()), old.GetName())
			}
		}
		fmt.Fprintf(w, "  put %s %s: %s (%s)\n", groupKindWord(gr.GetKind()), gr.GetName(), strings.Join(gr.GetMembers(), ", "), what)
	}
	for _, gr := range p.unchanged {
		fmt.Fprintf(w, "  %s %s: already as the file has it\n", groupKindWord(gr.GetKind()), gr.GetName())
	}
	fmt.Fprintf(w, "  set the site policy, replacing the license's: %d rule(s)\n", len(p.policy.GetRules()))
	for i, r := range p.policy.GetRules() {
		fmt.Fprintf(w, "    %d  %s, %s pool: %s\n", i, ruleWord(r.GetKind()), poolLabel(r.GetFeature()), ruleMeaning(r))
	}
	if dryRun && p.invalid == nil {
		fmt.Fprintln(w, "dry run: validated, nothing changed")
	}
	return nil
}

// ImportView is what `seatctl policy import -o json` prints: the notes,
// the groups put (or to put, dry_run) and the policy set, as the API gives
// them.
type ImportView struct {
	DryRun bool              `json:"dryRun"`
	Notes  []ImportNote      `json:"notes"`
	Groups []json.RawMessage `json:"groups"`
	Policy json.RawMessage   `json:"policy"`
}

// ImportNote is one line of the options file not mapped as written
// (line 0: what the file maps but import leaves out, as a LINGER).
type ImportNote struct {
	Line   int    `json:"line"`
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

func (p *importPlan) view(dryRun bool) ImportView {
	v := ImportView{DryRun: dryRun, Notes: []ImportNote{}, Groups: []json.RawMessage{}}
	for _, n := range p.notes {
		v.Notes = append(v.Notes, ImportNote(n))
	}
	for _, gr := range p.puts {
		raw, _ := protojson.Marshal(gr)
		v.Groups = append(v.Groups, raw)
	}
	v.Policy, _ = protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(p.policy)
	return v
}

// licenseForPolicy is what the options-file reader and Policy.Validate
// need of a license: its seats and its grants' features and seats.
func licenseForPolicy(l *seatdv1.License) *server.License {
	out := &server.License{ID: l.GetId(), Seats: int(l.GetSeats())}
	for _, gr := range l.GetGrants() {
		out.Grants = append(out.Grants, server.Grant{ID: gr.GetId(), Feature: gr.GetFeature(), Version: gr.GetVersion(), Seats: int(gr.GetSeats())})
	}
	return out
}

func ruleKindProto(k server.RuleKind) seatdv1.PolicyRule_Kind {
	switch k {
	case server.RuleReserve:
		return seatdv1.PolicyRule_KIND_RESERVE
	case server.RuleMax:
		return seatdv1.PolicyRule_KIND_MAX
	case server.RuleInclude:
		return seatdv1.PolicyRule_KIND_INCLUDE
	case server.RuleExclude:
		return seatdv1.PolicyRule_KIND_EXCLUDE
	}
	return seatdv1.PolicyRule_KIND_UNSPECIFIED
}

func subjectKindProto(k server.SubjectKind) seatdv1.PolicySubject_Kind {
	switch k {
	case server.SubjectUser:
		return seatdv1.PolicySubject_KIND_USER
	case server.SubjectHost:
		return seatdv1.PolicySubject_KIND_HOST
	case server.SubjectGroup:
		return seatdv1.PolicySubject_KIND_GROUP
	case server.SubjectHostGroup:
		return seatdv1.PolicySubject_KIND_HOST_GROUP
	}
	return seatdv1.PolicySubject_KIND_UNSPECIFIED
}

func groupKindProto(k server.SubjectKind) seatdv1.IdentityGroup_Kind {
	switch k {
	case server.SubjectGroup:
		return seatdv1.IdentityGroup_KIND_USERS
	case server.SubjectHostGroup:
		return seatdv1.IdentityGroup_KIND_HOSTS
	}
	return seatdv1.IdentityGroup_KIND_UNSPECIFIED
}

func groupKindOf(k seatdv1.IdentityGroup_Kind) server.SubjectKind {
	if k == seatdv1.IdentityGroup_KIND_HOSTS {
		return server.SubjectHostGroup
	}
	return server.SubjectGroup
}

// groupKindWord names a group's kind as subjects do: "group" (of users)
// or "host group".
func groupKindWord(k seatdv1.IdentityGroup_Kind) string {
	if k == seatdv1.IdentityGroup_KIND_HOSTS {
		return "host group"
	}
	return "group"
}
