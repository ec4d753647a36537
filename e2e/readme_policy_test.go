package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEPolicy runs the README's "Who gets a seat: site policy"
// section as a person types it, as TestREADMEFeatures runs the features
// section: a seatd started as make run starts it (embedded mode, whose
// store keeps and enforces site policies), the quickstart's environment,
// then every sh block of the section in order, in one bash. After them the
// test checks what the reader was told: the options file's lines not
// mapped, the group and the policy as seatd keeps them, each refusal, and
// the leases the policy let through.
func TestREADMEPolicy(t *testing.T) {
	t.Parallel()
	commands := quickstartEnvironment(t) + "\n" + strings.Join(readmeSection(t, "Who gets a seat: site policy"), "\n")
	out := runAsTyped(t, "the README's site policy section", commands, `
[[ $SITE_ID == lic_* && $SITE_KEY == slk_* ]] || fail "a variable is not what it should be: $SITE_ID $SITE_KEY"
RULES=$(bin/seatctl policy get $SITE_ID -o json | jq -c '[.rules[] | [.kind, .feature, .count, .subject.kind, .subject.name]]')
[[ $RULES == '[["KIND_RESERVE","",1,"KIND_GROUP","night"],["KIND_MAX","",1,"KIND_USER","bob"],["KIND_EXCLUDE","",0,"KIND_USER","intern"]]' ]] ||
  fail "the policy imported: $RULES"
GROUPS_NOW=$(bin/seatctl groups ls -o json | jq -c '[.groups[] | {name, kind, members}]')
[[ $GROUPS_NOW == '[{"name":"night","kind":"KIND_USERS","members":["alice","carol"]}]' ]] || fail "the groups: $GROUPS_NOW"
USERS=$(bin/seatctl leases ls $SITE_ID -o json | jq -c '[.leases[] | select(.state == "LEASE_STATE_ACTIVE") | .user] | sort')
[[ $USERS == '["alice","bob","dave"]' ]] || fail "the seats went to: $USERS"
`)
	for _, want := range []string{
		"acme.opt: not mapped as written:",            // the import's notes, line by line
		"  line 6: TIMEOUTALL 3600",                   // the line seatd does not map
		"dry run: validated, nothing changed",         // --dry-run
		"  put group night: alice, carol (new)",       // what it does
		"set the site policy of license ",             // and did
		"user bob holds at most 1",                    // policy get, rule by rule
		`{"reason":"EXCLUDED",`,                       // the intern
		`{"user":"bob","seatsInUse":1,"seatLimit":3}`, // bob's first copy
		`{"reason":"USER_LIMIT",`,                     // and his second
		`{"user":"dave","seatsInUse":2,"seatLimit":3}`,
		`{"reason":"SEATS_RESERVED","message":"no seat of the license free for this client: 1 of 1 remaining seats are reserved for group night"}`,
		`{"user":"alice","seatsInUse":3,"seatLimit":3,"reservedFor":"night"}`, // the night shift's seat
	} {
		require.Contains(t, out, want, "the README's site policy section output:\n%s", out)
	}
	require.Regexp(t, `\nlic_\S+\s+ACME site\s+3\s+1 \(1 taken\)\s+0\s+3\s`, out, "status: the reserved seat apart from the seats in use")
}
