package seatctl

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func cleanupCmd(g *globals) *cobra.Command {
	run := &cobra.Command{
		Use:   "run",
		Short: "Run a cleanup pass now and show what it did (operator key)",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.Cleanup, &seatdv1.CleanupRequest{})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			_, err = fmt.Fprintln(g.stdout, "cleanup pass: "+describeRun(resp.GetRun()))
			return err
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Who leads cleanup, its interval, the last and next pass (operator key)",
		Args:  exactArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			resp, err := call(g, c, seatdv1.AdminServiceClient.GetCleanupStatus, &seatdv1.GetCleanupStatusRequest{})
			if err != nil {
				return err
			}
			if done, err := g.emit(resp); done {
				return err
			}
			return printCleanupStatus(g.stdout, resp)
		},
	}
	return group("cleanup", "Run a cleanup pass, or show cleanup status (operator key)", nil, run, status)
}

// describeRun is one cleanup pass on one line.
func describeRun(r *seatdv1.CleanupRun) string {
	if r == nil {
		return "none yet"
	}
	s := fmt.Sprintf("%s at %s (%s), %d scanned, %d expired, took %s",
		r.GetResult(), fmtTime(r.GetStartedAt()), r.GetTrigger(), r.GetScanned(), r.GetExpired(), fmtDuration(r.GetDuration()))
	if r.GetErrors() > 0 {
		s += fmt.Sprintf(", %d errors (retried next pass)", r.GetErrors())
	}
	return s
}

func printCleanupStatus(w io.Writer, st *seatdv1.GetCleanupStatusResponse) error {
	leader := st.GetLeaderId()
	if leader == "" {
		leader = "none (no instance holds the lock)"
	}
	if st.GetIsLeader() {
		leader += " (the instance that answered)"
	}
	t := &table{w: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row("cleanup leader", leader)
	t.row("answered by", st.GetInstanceId())
	t.row("interval", fmtDuration(st.GetInterval()))
	t.row("last pass", describeRun(st.GetLastRun()))
	t.row("next pass", fmtTime(st.GetNextRunAt()))
	return t.flush()
}
