// Package seatctl is the command-line client of seatd for operators and
// tenant admins: licenses, site policies, leases, tenants, API keys,
// cleanup and reports, over AdminService. client/cmd/seatctl is its main.
//
// Output is a human table by default; -o json prints the API's own JSON
// (protojson, lowerCamelCase, as over REST) and -o yaml the same as YAML.
// Exit codes are in ExitOK … ExitRefused.
package seatctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// DefaultAddr is where seatctl looks for seatd without --addr or SEATCTL_ADDR.
const DefaultAddr = "127.0.0.1:7070"

// globals are the flags every command shares.
type globals struct {
	addr        string
	key         string
	keyFile     string
	tenant      string
	output      string
	timeout     time.Duration
	tls         bool
	tlsCA       string
	tlsCert     string
	tlsKey      string
	tlsServer   string
	now         func() time.Time // nil: time.Now (a test's is fixed)
	stdout      io.Writer
	conn        *grpc.ClientConn
	adminClient seatdv1.AdminServiceClient
}

// Main runs seatctl with args (without the program name) and returns the
// process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(&globals{stdout: stdout}, args, stdout, stderr)
}

// run is Main with its globals (a test's hold a fake AdminService client).
func run(g *globals, args []string, stdout, stderr io.Writer) int {
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if g.conn != nil {
		_ = g.conn.Close()
	}
	if err == nil {
		return ExitOK
	}
	code, msg := describe(err, g.addr)
	fmt.Fprintln(stderr, "seatctl: "+msg)
	return code
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "seatctl",
		Short: "Administer a seatd server: licenses, leases, tenants, API keys, signing keys, cleanup, reports",
		Long: `seatctl administers a seatd server over gRPC (AdminService).

The address, key and TLS settings come from flags or the environment:
SEATCTL_ADDR (default ` + DefaultAddr + `), SEATCTL_KEY or SEATCTL_KEY_FILE
(the operator key or a tenant's API key), SEATCTL_TENANT.

Exit codes: 0 ok, 1 other error, 2 usage or invalid input, 3 not found,
4 not allowed (no key, unknown key, permission denied), 5 seatd unreachable
or unavailable, 6 refused (already exists, quota, failed precondition; a
license file, site request, usage export or key that does not verify).

vendor and site work on files only: license files for air-gapped sites.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       "v1",
	}
	f := root.PersistentFlags()
	f.StringVar(&g.addr, "addr", envOr("SEATCTL_ADDR", DefaultAddr), "seatd gRPC address host:port (SEATCTL_ADDR)")
	f.StringVar(&g.key, "key", "", "operator key or API key (SEATCTL_KEY); prefer --key-file, flags show in ps")
	f.StringVar(&g.keyFile, "key-file", os.Getenv("SEATCTL_KEY_FILE"), "file holding the key (SEATCTL_KEY_FILE)")
	f.StringVar(&g.tenant, "tenant", os.Getenv("SEATCTL_TENANT"), "tenant to work in, operator key only (SEATCTL_TENANT; default: the default tenant)")
	f.StringVarP(&g.output, "output", "o", "table", "output format: table, json or yaml")
	f.DurationVar(&g.timeout, "timeout", 30*time.Second, "time limit of each call")
	f.BoolVar(&g.tls, "tls", false, "use TLS (system roots unless --tls-ca)")
	f.StringVar(&g.tlsCA, "tls-ca", "", "CA bundle (PEM) to verify seatd with; implies --tls")
	f.StringVar(&g.tlsCert, "tls-cert", "", "client certificate (PEM) for mTLS; implies --tls")
	f.StringVar(&g.tlsKey, "tls-key", "", "client certificate's private key (PEM)")
	f.StringVar(&g.tlsServer, "tls-server-name", "", "server name to verify instead of the address's host")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))

	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		switch g.output {
		case "table", "json", "yaml":
			return nil
		}
		return usageErrorf("-o %q: want table, json or yaml", g.output)
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	root.AddCommand(
		statusCmd(g),
		licensesCmd(g),
		grantsCmd(g),
		policyCmd(g),
		groupsCmd(g),
		leasesCmd(g),
		tenantsCmd(g),
		apikeysCmd(g),
		cleanupCmd(g),
		reportCmd(g),
		exportCmd(g),
		usageGroupCmd(g),
		signingKeysCmd(g),
		jwksCmd(g),
		licenseFileCmd(g),
		vendorCmd(g),
		siteCmd(g),
		webhooksCmd(g),
	)
	return root
}

// clock is now, by the test's clock when it has one.
func (g *globals) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// adminKey is the key to send: --key, else --key-file / SEATCTL_KEY_FILE,
// else SEATCTL_KEY.
func (g *globals) adminKey() (string, error) {
	if g.key != "" {
		return g.key, nil
	}
	if g.keyFile != "" {
		data, err := os.ReadFile(g.keyFile)
		if err != nil {
			return "", usageErrorf("key file: %v", err)
		}
		if k := strings.TrimSpace(string(data)); k != "" {
			return k, nil
		}
		return "", usageErrorf("key file %s is empty", g.keyFile)
	}
	if k := os.Getenv("SEATCTL_KEY"); k != "" {
		return k, nil
	}
	return "", noKeyError{}
}

// admin returns the AdminService client and a context carrying the key,
// bounded by --timeout.
func (g *globals) admin(cmd *cobra.Command) (seatdv1.AdminServiceClient, context.Context, context.CancelFunc, error) {
	key, err := g.adminKey()
	if err != nil {
		return nil, nil, nil, err
	}
	if g.adminClient == nil {
		conn, err := g.dial()
		if err != nil {
			return nil, nil, nil, err
		}
		g.adminClient = seatdv1.NewAdminServiceClient(conn)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	return g.adminClient, ctx, cancel, nil
}

// dial connects to seatd once (--addr, TLS flags); the calls share it.
func (g *globals) dial() (*grpc.ClientConn, error) {
	if g.conn != nil {
		return g.conn, nil
	}
	creds, err := g.transport()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, usageErrorf("--addr %q: %v", g.addr, err)
	}
	g.conn = conn
	return conn, nil
}

// call makes one AdminService call (a method expression such as
// seatdv1.AdminServiceClient.GetLicense) with the key, within --timeout.
func call[Req, Resp any](g *globals, c *cobra.Command, method func(seatdv1.AdminServiceClient, context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	admin, ctx, cancel, err := g.admin(c)
	if err != nil {
		var zero Resp
		return zero, err
	}
	defer cancel()
	return method(admin, ctx, req)
}

func (g *globals) transport() (credentials.TransportCredentials, error) {
	if !g.tls && g.tlsCA == "" && g.tlsCert == "" {
		return insecure.NewCredentials(), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: g.tlsServer}
	if g.tlsCA != "" {
		pem, err := os.ReadFile(g.tlsCA)
		if err != nil {
			return nil, usageErrorf("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("--tls-ca %s: no PEM certificate in it", g.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if g.tlsCert != "" || g.tlsKey != "" {
		if g.tlsCert == "" || g.tlsKey == "" {
			return nil, usageErrorf("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, usageErrorf("client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(cfg), nil
}

// exactArgs is cobra.ExactArgs with a usage error and the argument names.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != len(names) {
			if len(names) == 0 {
				return usageErrorf("no arguments expected, got %d", len(args))
			}
			return usageErrorf("want %s, got %d argument(s)", strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// group is a command that only holds subcommands; run bare, it shows help
// and fails with a usage error when given an unknown subcommand.
func group(use, short string, aliases []string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:     use,
		Short:   short,
		Aliases: aliases,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], use)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("%s needs a subcommand", use)
		},
	}
	c.AddCommand(subs...)
	return c
}
