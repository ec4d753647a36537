// Package compose holds seatd's compose file for distributed mode; this test
// decodes it with compose-go, the Compose Specification's own Go loader
// (validated against the specification's schema, so an unknown or misspelt
// key fails), and checks what the file promises. It is a module of its own
// so that compose-go's dependencies stay out of seatd's: make test/compose.
package compose

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

const file = "compose.yaml"

// secrets are the variables compose.yaml must take from .env or the shell.
var secrets = map[string]string{
	"POSTGRES_PASSWORD":                "0123456789abcdef0123456789abcdef0123456789abcdef",
	"SEATD_OPERATOR_KEY":               "fedcba9876543210fedcba9876543210fedcba9876543210",
	"SEATD_SIGNING_KEY_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
}

func load(t *testing.T, path string, env map[string]string, opts ...func(*loader.Options)) (*types.Project, error) {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	own := types.Mapping{} // the loader adds to its environment
	for k, v := range env {
		own[k] = v
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs}},
		Environment: own,
	}
	return loader.LoadWithContext(context.Background(), details,
		append([]func(*loader.Options){func(o *loader.Options) { o.SetProjectName("seatd", true) }}, opts...)...)
}

func project(t *testing.T) *types.Project {
	t.Helper()
	p, err := load(t, file, secrets)
	require.NoError(t, err, "%s does not load", file)
	return p
}

func TestComposeFileFollowsTheSpecification(t *testing.T) {
	p := project(t)
	names := p.ServiceNames()
	require.ElementsMatch(t, []string{"postgres", "redis", "migrate", "seatd-1", "seatd-2"}, names)

	// The check is strict: the same file with one misspelt key fails.
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), file)
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(b), "stop_grace_period:", "stop_grace_periods:", 1)), 0o644))
	_, err = load(t, bad, secrets)
	require.ErrorContains(t, err, "stop_grace_periods", "a misspelt key must fail the load")
}

// imageName is the name:tag make image builds.
func imageName(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("make", "--no-print-directory", "-s", "-C", "../..", "image/name").Output()
	require.NoError(t, err, "make image/name")
	return strings.TrimSpace(string(out))
}

func TestSeatdServicesRunTheBuiltImageAfterTheMigration(t *testing.T) {
	p := project(t)
	image := imageName(t)
	seatds := 0
	for _, s := range p.Services {
		if !strings.HasPrefix(s.Name, "seatd-") {
			continue
		}
		seatds++
		require.Equal(t, image, s.Image, "%s runs the image make image builds", s.Name)
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, s.DependsOn["migrate"].Condition, "%s starts after the migration", s.Name)
		require.Equal(t, types.ServiceConditionHealthy, s.DependsOn["redis"].Condition, s.Name)
		require.Equal(t, "false", *s.Environment["SEATD_AUTO_MIGRATE"], "%s leaves the schema to the migrate service", s.Name)
		require.Equal(t, s.Name, *s.Environment["SEATD_INSTANCE_ID"])
		require.NotNil(t, s.Environment["SEATD_POSTGRES_URL"], s.Name)
		require.NotNil(t, s.Environment["SEATD_REDIS_URL"], s.Name)
		require.NotNil(t, s.Environment["SEATD_OPERATOR_KEY"], "%s: distributed mode needs one operator key on every instance", s.Name)
		require.True(t, s.ReadOnly, s.Name)
		require.Contains(t, s.CapDrop, "ALL", s.Name)
	}
	require.Equal(t, 2, seatds, "two seatd instances")

	m := p.Services["migrate"]
	require.Equal(t, image, m.Image)
	require.Equal(t, types.ShellCommand{"migrate", "up"}, m.Command)
	require.Equal(t, "no", m.Restart, "the migration runs once")
	require.Equal(t, types.ServiceConditionHealthy, m.DependsOn["postgres"].Condition)
	require.Equal(t, *p.Services["seatd-1"].Environment["SEATD_POSTGRES_URL"], *m.Environment["SEATD_POSTGRES_URL"],
		"the migration and the instances use one database")
}

func TestSeatdHealthChecksAskReadyz(t *testing.T) {
	p := project(t)
	cf, err := os.ReadFile("../image/Containerfile")
	require.NoError(t, err)
	for _, s := range p.Services {
		if !strings.HasPrefix(s.Name, "seatd-") {
			continue
		}
		require.NotNil(t, s.HealthCheck, "%s has a health check", s.Name)
		test := []string(s.HealthCheck.Test)
		require.GreaterOrEqual(t, len(test), 3, s.Name)
		require.Equal(t, "CMD", test[0], "%s: exec form (the image has no shell)", s.Name)
		require.Equal(t, "/readyz", test[len(test)-1], "%s: readiness turns 503 first thing on SIGTERM", s.Name)
		require.Contains(t, string(cf), filepath.Base(test[1]), "%s: the check's program %s is in the image", s.Name, test[1])
		require.Contains(t, string(cf), filepath.Dir(test[1])+"/", "%s: the check's program %s is where the image puts it", s.Name, test[1])
	}
}

var required = regexp.MustCompile(`^\$\{([A-Z0-9_]+):\?[^}]+\}$`)

// TestSecretsAreNotInline reads the file before interpolation: every
// password, key or secret is a required variable (${NAME:?message}), and a
// URL's password is one too; without them the load fails naming them.
func TestSecretsAreNotInline(t *testing.T) {
	raw, err := load(t, file, secrets, func(o *loader.Options) { o.SkipInterpolation = true })
	require.NoError(t, err)
	secretName := regexp.MustCompile(`(PASSWORD|SECRET|TOKEN|OPERATOR_KEY|ENCRYPTION_KEY)$`)
	seen := map[string]bool{}
	for _, s := range raw.Services {
		for name, v := range s.Environment {
			require.NotNil(t, v, "%s: %s has no value", s.Name, name)
			if secretName.MatchString(name) {
				m := required.FindStringSubmatch(*v)
				require.NotNil(t, m, "%s: %s must be ${VAR:?message}, not %q", s.Name, name, *v)
				seen[m[1]] = true
			}
			if u, err := url.Parse(*v); err == nil && u.User != nil {
				pw, ok := u.User.Password()
				if !ok {
					continue
				}
				m := required.FindStringSubmatch(pw)
				require.NotNil(t, m, "%s: %s's password must be ${VAR:?message}", s.Name, name)
				seen[m[1]] = true
			}
		}
	}
	for name := range secrets {
		require.True(t, seen[name], "%s is used as a secret", name)
		env := map[string]string{}
		for k, v := range secrets {
			if k != name {
				env[k] = v
			}
		}
		_, err := load(t, file, env)
		require.ErrorContains(t, err, name, "without %s the load must fail naming it", name)
	}
}

// TestEnvExampleNamesEverySecret: env.example, copied to .env, lists every
// variable the file requires, empty, so that compose refuses to start until
// each is filled in.
func TestEnvExampleNamesEverySecret(t *testing.T) {
	f, err := os.Open("env.example")
	require.NoError(t, err)
	defer f.Close()
	vars, err := dotenv.Parse(f)
	require.NoError(t, err)
	require.Len(t, vars, len(secrets), "env.example: %v", vars)
	for name := range secrets {
		v, ok := vars[name]
		require.True(t, ok, "env.example lacks %s", name)
		require.Empty(t, v, "env.example must not carry a value for %s", name)
	}
	_, err = load(t, file, vars)
	require.Error(t, err, "compose must refuse the example's empty values")
}
