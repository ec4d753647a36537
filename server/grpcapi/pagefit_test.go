package grpcapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestPageOfLargeLicensesFits: licenses carrying the most metadata allowed
// would make a page of page_size too large for a client's default 4 MiB;
// the page is cut to fit, and paging still reaches every license once.
func TestPageOfLargeLicensesFits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	md := map[string]string{}
	for i := range server.MaxMetadataEntries {
		md[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", server.MaxMetadataValue)
	}
	const n = 150 // ~33 KiB each: ~5 MB in all
	want := map[string]bool{}
	for range n {
		resp, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
			Name: "big", Seats: 1, LeaseTtl: durationpb.New(time.Minute), Metadata: md,
		}})
		require.NoError(t, err)
		want[resp.GetLicense().GetId()] = true
	}
	got := map[string]bool{}
	token, pages := "", 0
	for {
		resp, err := e.admin.ListLicenses(operator(t), &seatdv1.ListLicensesRequest{PageSize: n, PageToken: token})
		require.NoError(t, err, "a page always fits the client's default receive limit")
		require.LessOrEqual(t, proto.Size(resp), pageBudget)
		for _, l := range resp.GetLicenses() {
			require.False(t, got[l.GetId()], "license %s listed twice", l.GetId())
			got[l.GetId()] = true
		}
		pages++
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	require.Equal(t, want, got)
	require.Greater(t, pages, 1)
}
