package server

import (
	"testing"
	"time"
)

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"2024.2", "2024.10", -1},
		{"1.10", "1.9", 1},
		{"3", "3.0", 0},
		{"3.0.0", "3", 0},
		{"3.0.1", "3", 1},
		{"2024", "2025", -1},
		{"010", "10", 0},
		{"99999999999999999999", "99999999999999999998", 1},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := CompareVersions(c.b, c.a); got != -c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

func TestCheckVersionAndFeature(t *testing.T) {
	for _, v := range []string{"", "1.", ".1", "1..2", "v1", "1.2a", "1 2"} {
		if CheckVersion("version", v) == nil {
			t.Errorf("CheckVersion(%q) accepted", v)
		}
	}
	for _, v := range []string{"1", "2024.2", "3.1.4", "0"} {
		if err := CheckVersion("version", v); err != nil {
			t.Errorf("CheckVersion(%q): %v", v, err)
		}
	}
	long := make([]byte, MaxFeatureLength+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, f := range []string{"", string(long), "-x", "a b", "ré", "a/b"} {
		if CheckFeature("feature", f) == nil {
			t.Errorf("CheckFeature(%q) accepted", f)
		}
	}
	for _, f := range []string{"render", "sim-2", "a.b_c", "X"} {
		if err := CheckFeature("feature", f); err != nil {
			t.Errorf("CheckFeature(%q): %v", f, err)
		}
	}
}

func TestGrantsForPickOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := License{ID: "lic_1", Grants: []Grant{
		{ID: "lic_1.a", Feature: "render", Version: "2025", ExpiresAt: now.Add(48 * time.Hour)},
		{ID: "lic_1.b", Feature: "render", Version: "2024", ExpiresAt: now.Add(24 * time.Hour)},
		{ID: "lic_1.c", Feature: "render", Version: "2026"},
		{ID: "lic_1.d", Feature: "render", Version: "2025.1", ExpiresAt: now.Add(48 * time.Hour)},
		{ID: "lic_1.e", Feature: "sim"},
	}}
	ids := func(gs []Grant) (out []string) {
		for _, g := range gs {
			out = append(out, g.ID)
		}
		return out
	}
	gs, err := l.GrantsFor("render", "2024")
	if err != nil || len(gs) != 4 || gs[0].ID != "lic_1.b" || gs[1].ID != "lic_1.a" || gs[2].ID != "lic_1.d" || gs[3].ID != "lic_1.c" {
		t.Fatalf("render 2024: %v %v", ids(gs), err)
	}
	gs, err = l.GrantsFor("render", "2025.0.1")
	if err != nil || len(gs) != 2 || gs[0].ID != "lic_1.d" {
		t.Fatalf("render 2025.0.1: %v %v", ids(gs), err)
	}
	if _, err := l.GrantsFor("render", "2027"); ErrorReason(err) != ReasonVersionNotLicensed {
		t.Fatalf("render 2027: %v", err)
	}
	if _, err := l.GrantsFor("cad", ""); ErrorReason(err) != ReasonFeatureNotLicensed {
		t.Fatalf("cad: %v", err)
	}
	// The grant that expires first goes first, even at a higher version.
	l.Grants = append(l.Grants, Grant{ID: "lic_1.f", Feature: "cam", Version: "2025", ExpiresAt: now.Add(time.Hour)},
		Grant{ID: "lic_1.g", Feature: "cam", Version: "2024", ExpiresAt: now.Add(10 * time.Hour)})
	gs, err = l.GrantsFor("cam", "2024")
	if err != nil || len(gs) != 2 || gs[0].ID != "lic_1.f" {
		t.Fatalf("cam 2024: %v %v", ids(gs), err)
	}
	gs, err = l.GrantsFor("sim", "9.9")
	if err != nil || len(gs) != 1 {
		t.Fatalf("sim: %v %v", ids(gs), err)
	}
}

func TestGrantPool(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := License{ID: "lic_1", TenantID: "t", Active: true, LeaseTTL: time.Minute, ExpiresAt: now.Add(time.Hour), LeasingStrategy: PerUser}
	g := Grant{ID: "lic_1.a", LicenseID: "lic_1", Feature: "render", Seats: 3, StartsAt: now, ExpiresAt: now.Add(2 * time.Hour)}
	p := g.Pool(&l)
	if p.ID != g.ID || p.Seats != 3 || !p.ExpiresAt.Equal(l.ExpiresAt) || p.LeaseTTL != time.Minute || p.LeasingStrategy != PerUser || p.Key != "" {
		t.Fatalf("pool %+v", p)
	}
	if ErrorReason(p.CheckUsable(now.Add(-time.Second))) != ReasonGrantNotStarted {
		t.Fatal("usable before start")
	}
	if err := p.CheckUsable(now); err != nil {
		t.Fatal(err)
	}
	if ErrorReason(p.CheckUsable(now.Add(time.Hour))) != ReasonLicenseExpired {
		t.Fatal("usable after the license's expiry")
	}
	if PoolLicense(g.ID) != "lic_1" || PoolLicense("lic_1") != "lic_1" || !IsGrantID(g.ID) || IsGrantID("lic_1") {
		t.Fatal("PoolLicense")
	}
	bad := Grant{Feature: "render", StartsAt: now, ExpiresAt: now}
	if e, ok := bad.Validate("grant").(*Error); !ok || e.Field != "grant.expires_at" {
		t.Fatalf("expiry before start: %v", bad.Validate("grant"))
	}
}
