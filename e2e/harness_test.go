package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/syncbuffer"
)

const (
	// testOperatorKey is the operator key the harness passes by default.
	testOperatorKey = "e2e-operator-key-0123456789"
	// startTimeout bounds how long seatd may take to serve (a -race build
	// on a busy machine is slow to start; a distributed one may wait out
	// its --connect-timeout of 20 s).
	startTimeout = eventTimeout
	// exitTimeout bounds how long seatd may take to exit after SIGTERM.
	exitTimeout = 30 * time.Second
)

// options tell start how to run seatd.
type options struct {
	dataDir       string   // default: a new t.TempDir()
	operatorKey   string   // default: testOperatorKey
	noOperatorKey bool     // pass no --operator-key (seatd generates one)
	args          []string // extra flags, after the defaults (so they win)
	env           []string // extra environment, KEY=VALUE
	// rawArgs passes exactly args: no default flags at all.
	rawArgs bool
}

// proc is a running seatd process.
type proc struct {
	t           testing.TB
	cmd         *exec.Cmd
	out         *syncbuffer.Buffer // stdout and stderr
	done        chan struct{}
	DataDir     string
	OperatorKey string
	GRPCAddr    string
	HTTPAddr    string
	conn        *grpc.ClientConn
}

// seatdEnv is the environment of a seatd child: ours without any SEATD_
// variable (SEATD_BIN and SEATD_TOOLS_BIN are ours, not seatd's, and a
// developer's SEATD_* must not leak into the tests), plus extra.
func seatdEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func (o options) argv(t testing.TB) (args []string, dataDir, key string) {
	if o.rawArgs {
		return o.args, o.dataDir, o.operatorKey
	}
	dataDir = o.dataDir
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	args = []string{
		"--grpc-addr", "127.0.0.1:0",
		"--http-addr", "127.0.0.1:0",
		"--data-dir", dataDir,
		"--drain-delay", "0s",
		"--cleanup-interval", "1h",
	}
	if !o.noOperatorKey {
		key = o.operatorKey
		if key == "" {
			key = testOperatorKey
		}
		args = append(args, "--operator-key", key)
	}
	return append(args, o.args...), dataDir, key
}

var (
	servingText    = regexp.MustCompile(`msg="seatd serving".*\bgrpc=(\S+).*\bhttp=(\S+)`)
	servingJSON    = regexp.MustCompile(`"msg":"seatd serving".*"grpc":"([^"]+)".*"http":"([^"]+)"`)
	generatedKeyRE = regexp.MustCompile(`seatd generated an operator key and kept it in the data dir.*\bfile=(\S+)`)
)

// start runs seatd and waits until it serves. The process is stopped (and its
// output logged if the test failed) when the test ends.
func start(t testing.TB, o options) *proc {
	t.Helper()
	args, dataDir, key := o.argv(t)
	p := &proc{t: t, out: &syncbuffer.Buffer{}, done: make(chan struct{}), DataDir: dataDir, OperatorKey: key}
	p.cmd = exec.Command(seatdBin, args...)
	p.cmd.Env = seatdEnv(o.env)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start(), "start seatd")
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.conn != nil {
			_ = p.conn.Close()
		}
		if p.running() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(exitTimeout):
				t.Errorf("seatd (pid %d) did not exit %s after SIGTERM; killing it", p.cmd.Process.Pid, exitTimeout)
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("seatd %s output:\n%s", strings.Join(args, " "), p.out.String())
		}
	})

	deadline := time.Now().Add(startTimeout)
	for {
		out := p.out.String()
		m := servingText.FindStringSubmatch(out)
		if m == nil {
			m = servingJSON.FindStringSubmatch(out)
		}
		if m != nil {
			p.GRPCAddr, p.HTTPAddr = m[1], m[2]
			break
		}
		select {
		case <-p.done:
			t.Fatalf("seatd exited with code %d before serving:\n%s", p.cmd.ProcessState.ExitCode(), out)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("seatd did not log \"seatd serving\" within %s:\n%s", startTimeout, out)
		}
	}
	if p.OperatorKey == "" {
		if m := generatedKeyRE.FindStringSubmatch(p.out.String()); m != nil {
			b, err := os.ReadFile(m[1])
			require.NoError(t, err, "the generated operator key's file")
			p.OperatorKey = strings.TrimSpace(string(b))
		}
	}
	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(callDeadline))
	require.NoError(t, err)
	p.conn = conn
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Output is everything seatd wrote so far.
func (p *proc) Output() string { return p.out.String() }

// signal sends sig to seatd.
func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
}

// wait waits for seatd to exit and returns its exit code.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		p.t.Fatalf("seatd did not exit within %s", exitTimeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// stopOK sends SIGTERM and requires a clean exit (code 0, no data race).
func (p *proc) stopOK() {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	code := p.wait()
	require.Equal(p.t, 0, code, "seatd exit code after SIGTERM")
	require.NotContains(p.t, p.Output(), "DATA RACE")
}

func (p *proc) admin() seatdv1.AdminServiceClient { return seatdv1.NewAdminServiceClient(p.conn) }
func (p *proc) seats() seatdv1.SeatServiceClient  { return seatdv1.NewSeatServiceClient(p.conn) }
func (p *proc) heartbeats() seatdv1.HeartbeatServiceClient {
	return seatdv1.NewHeartbeatServiceClient(p.conn)
}

// asOperator returns ctx carrying the operator key.
func (p *proc) asOperator(ctx context.Context) context.Context {
	return bearer(ctx, p.OperatorKey)
}

// bearer returns ctx carrying `authorization: Bearer key`.
func bearer(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

// eventTimeout bounds the wait for one thing a test expects to happen (a
// queue position, a stream's end, a restarted instance, a pass): long, so
// that only a thing that does not happen fails, not a machine that is slow.
// A test that checks how soon something happens says so with a bound of
// its own.
const eventTimeout = 60 * time.Second

// unaryTimeout bounds one unary call on a proc's connection that has no
// deadline of its own (callDeadline): a call, not a test, is what must not
// take long, however many calls a test makes on a busy machine.
const unaryTimeout = 60 * time.Second

// testContext is the context of one test's calls: it ends with the test.
// It has no deadline for the test as a whole (a fixed one failed TestSeatctl
// when its dozens of seatctl runs took 66-92 s on a loaded machine): each
// unary call on a proc's connection gets unaryTimeout, a step that runs a
// program bounds it with stepContext, and go test's -timeout bounds the rest.
func testContext(t testing.TB) context.Context {
	return t.Context()
}

// stepContext bounds one step of a test (a program it runs, a call outside
// a proc's connection) by d.
func stepContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// callDeadline gives a unary call without a deadline unaryTimeout.
func callDeadline(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, unaryTimeout)
		defer cancel()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// requireStatus requires err to be a gRPC status with code and, when reason
// is not empty, a google.rpc.ErrorInfo with that reason in domain "seatd".
func requireStatus(t testing.TB, err error, code codes.Code, reason string) *status.Status {
	t.Helper()
	require.Error(t, err, "want %s %s", code, reason)
	st, ok := status.FromError(err)
	require.True(t, ok, "not a gRPC status: %v", err)
	require.Equal(t, code, st.Code(), "status: %v", st)
	if reason != "" {
		info := errorInfo(st)
		require.NotNil(t, info, "status has no ErrorInfo detail: %v", st)
		require.Equal(t, reason, info.GetReason(), "ErrorInfo reason of %v", st)
		require.Equal(t, "seatd", info.GetDomain())
	}
	return st
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// ---- REST ----

// httpResp is a decoded HTTP answer.
type httpResp struct {
	Code int
	Raw  []byte
	JSON map[string]any // nil when the body is not a JSON object
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func (p *proc) url(path string) string { return "http://" + p.HTTPAddr + path }

// do sends a request to seatd's HTTP port. body is a string (sent as is) or
// a value to marshal; key, when set, goes in `Authorization: Bearer`.
func (p *proc) do(t testing.TB, method, path, key string, body any) httpResp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, p.url(path), rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := httpResp{Code: resp.StatusCode, Raw: raw}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		r.JSON = obj
	}
	return r
}

// requireCode requires the HTTP status code, showing the body if it differs.
func (r httpResp) requireCode(t testing.TB, code int) httpResp {
	t.Helper()
	require.Equal(t, code, r.Code, "HTTP body: %s", r.Raw)
	return r
}

// get walks a dotted path of object keys ("lease.id") in the JSON body.
func (r httpResp) get(t testing.TB, path string) any {
	t.Helper()
	var v any = r.JSON
	for _, k := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		require.True(t, ok, "%s: %q is not inside an object in %s", path, k, r.Raw)
		v, ok = obj[k]
		require.True(t, ok, "%s: no field %q in %s", path, k, r.Raw)
	}
	return v
}

func (r httpResp) str(t testing.TB, path string) string {
	t.Helper()
	s, ok := r.get(t, path).(string)
	require.True(t, ok, "%s is not a string in %s", path, r.Raw)
	return s
}

// num reads a number; int64 fields are strings in proto JSON, so both work.
func (r httpResp) num(t testing.TB, path string) float64 {
	t.Helper()
	return toNum(t, r.get(t, path))
}

func toNum(t testing.TB, v any) float64 {
	t.Helper()
	switch n := v.(type) {
	case float64:
		return n
	case string:
		var f float64
		require.NoError(t, json.Unmarshal([]byte(n), &f), "not a number: %q", n)
		return f
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}

// errorReason is the ErrorInfo reason in a gateway error body.
func (r httpResp) errorReason() string {
	details, _ := r.JSON["details"].([]any)
	for _, d := range details {
		m, _ := d.(map[string]any)
		if m["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

// ---- processes that must fail ----

// runToExit runs seatd with exactly args and env, expecting it to exit by
// itself within timeout. It returns the exit code and the output.
func runToExit(t testing.TB, timeout time.Duration, args, env []string) (int, string) {
	t.Helper()
	out := &syncbuffer.Buffer{}
	cmd := exec.Command(seatdBin, args...)
	cmd.Env = seatdEnv(env)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("wait for seatd: %v", err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		killed := <-done
		t.Fatalf("seatd %s did not exit within %s (it should fail at once; killed: %v); output:\n%s", strings.Join(args, " "), timeout, killed, out.String())
		return 0, ""
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago (freePort).
func freeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", freePort(t))
}

// eventually polls cond every 20ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, timeout, what, func() (bool, string) { return cond(), "" })
}

// waitUntil is eventually for a condition that says what it saw: a timeout
// reports the last thing it saw.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, saw string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if saw != "" {
				t.Fatalf("timed out after %s waiting for %s; last saw %s", timeout, what, saw)
			}
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitProgress waits for many things to happen (streams to open, clients to
// connect) for as long as they keep happening: it fails only when cond's
// count has not grown for stall, so the wait scales with how many there are
// and how busy the machine is, not with a fixed total. cond returns whether
// all have happened, how many have so far, and what it saw.
func waitProgress(t testing.TB, stall time.Duration, what string, cond func() (done bool, count int, saw string)) {
	t.Helper()
	began := time.Now()
	last, lastAt := -1, time.Now()
	for {
		done, n, saw := cond()
		if done {
			return
		}
		if n > last {
			last, lastAt = n, time.Now()
		}
		if time.Since(lastAt) > stall {
			t.Fatalf("waiting for %s: no progress for %s (after %s in all); last saw %s", what, stall, time.Since(began).Round(time.Millisecond), saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
