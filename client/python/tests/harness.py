"""Starts real seatd binaries for the tests, as e2e/harness_test.go does.

SEATD_BIN names the binary (make test passes it); without it the harness
builds one with `go build` once per run. Distributed mode uses the shared
PostgreSQL and Redis (SEATD_TEST_POSTGRES_URL / SEATD_TEST_REDIS_URL, by
default the ones scripts/services.sh starts), in a fresh schema and key
prefix per test, removed afterwards.
"""

import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse

import grpc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OPERATOR_KEY = "py-operator-key-0123456789"
PG_URL = os.environ.get("SEATD_TEST_POSTGRES_URL") or "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
REDIS_URL = os.environ.get("SEATD_TEST_REDIS_URL") or "redis://127.0.0.1:6379/0"
SERVING = re.compile(r'msg="seatd serving".*\bgrpc=(\S+).*\bhttp=(\S+)')

_built = []


def seatd_bin():
    if os.environ.get("SEATD_BIN"):
        return os.environ["SEATD_BIN"]
    if not _built:
        out = os.path.join(tempfile.mkdtemp(prefix="seatd-py-bin-"), "seatd")
        subprocess.run(["go", "build", "-o", out, "./server/cmd/seatd"], cwd=REPO, check=True)
        _built.append(out)
    return _built[0]


class Seatd:
    """One seatd process, serving on free ports."""

    def __init__(self, args=(), data_dir=None):
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="seatd-py-data-")
        self.log = tempfile.NamedTemporaryFile(prefix="seatd-py-log-", suffix=".txt", delete=False)
        argv = [seatd_bin(), "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
                "--data-dir", self.data_dir, "--drain-delay", "0s", "--cleanup-interval", "1h",
                "--operator-key", OPERATOR_KEY] + list(args)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEATD_")}
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30
        while True:
            m = SERVING.search(self.output())
            if m:
                self.address, self.http = m.group(1), m.group(2)
                return
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("seatd did not serve:\n" + self.output())
            time.sleep(0.02)

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


    def cleanup(self):
        """Removes the log and data dir; SEATD_PY_VERBOSE=1 prints the log first."""
        if os.environ.get("SEATD_PY_VERBOSE"):
            print("---- seatd %s\n%s" % (self.address, self.output()))
        os.unlink(self.log.name)
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _psql(sql):
    subprocess.run(["psql", PG_URL, "-qAtc", sql], check=True, stdout=subprocess.DEVNULL)


class Backend:
    """A fresh PostgreSQL schema and Redis key prefix for a group of instances."""

    def __init__(self):
        self.name = "py_" + secrets.token_hex(6)
        _psql("CREATE SCHEMA " + self.name)
        u = urllib.parse.urlsplit(PG_URL)
        q = urllib.parse.parse_qsl(u.query) + [("search_path", self.name)]
        self.pg_url = urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q)))
        self.prefix = self.name + ":"

    def args(self, instance):
        return ["--postgres-url", self.pg_url, "--redis-url", REDIS_URL, "--redis-key-prefix", self.prefix,
                "--instance-id", instance, "--connect-timeout", "20s", "--shutdown-timeout", "10s",
                "--pg-max-conns", "8"]

    def drop(self):
        _psql("SET client_min_messages = warning; DROP SCHEMA %s CASCADE" % self.name)
        keys = subprocess.run(["redis-cli", "-u", REDIS_URL, "--scan", "--pattern", self.prefix + "*"],
                              check=True, capture_output=True, text=True).stdout.split()
        for i in range(0, len(keys), 500):
            subprocess.run(["redis-cli", "-u", REDIS_URL, "del"] + keys[i:i + 500], check=True,
                           stdout=subprocess.DEVNULL)


class FakeRpcError(grpc.RpcError):
    """A failure an interceptor makes up, shaped like grpc's own."""

    def __init__(self, code, details="made up by the test"):
        super().__init__(details)
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return ()


class _Cut:
    """A response stream that fails once its gate is closed."""

    def __init__(self, call, gate):
        self.call, self.gate = call, gate

    def __iter__(self):
        return self

    def __next__(self):
        r = next(self.call)
        if self.gate.blocked():
            self.call.cancel()
            raise FakeRpcError(grpc.StatusCode.UNAVAILABLE, "network down (test)")
        return r

    def cancel(self):
        return self.call.cancel()


class Gate(grpc.UnaryUnaryClientInterceptor, grpc.StreamStreamClientInterceptor,
           grpc.UnaryStreamClientInterceptor):
    """A test's hand on the wire: counts calls, fails the methods it is told
    to (UNIMPLEMENTED heartbeat streams, a network outage), and can make the
    server's first reply to AcquireSeat go missing."""

    def __init__(self):
        self.calls = {}
        self.requests = {}
        self.no_stream = False
        self.down_until = 0.0
        self.drop_acquire_replies = 0

    def blocked(self):
        return time.time() < self.down_until

    def _note(self, details, request=None):
        name = details.method.rsplit("/", 1)[-1]
        self.calls[name] = self.calls.get(name, 0) + 1
        if request is not None:
            self.requests.setdefault(name, []).append(request)
        return name

    def intercept_unary_unary(self, continuation, details, request):
        name = self._note(details, request)
        if self.blocked() and name in ("Heartbeat", "AcquireSeat"):
            raise FakeRpcError(grpc.StatusCode.UNAVAILABLE, "network down (test)")
        call = continuation(details, request)
        if name == "AcquireSeat" and self.drop_acquire_replies > 0:
            self.drop_acquire_replies -= 1
            call.result()  # the server granted it ...
            raise FakeRpcError(grpc.StatusCode.UNAVAILABLE, "reply lost (test)")  # ... we never hear
        return call

    def intercept_stream_stream(self, continuation, details, request_iterator):
        self._note(details)
        if self.no_stream:
            raise FakeRpcError(grpc.StatusCode.UNIMPLEMENTED, "no heartbeat stream (test)")
        if self.blocked():
            raise FakeRpcError(grpc.StatusCode.UNAVAILABLE, "network down (test)")
        return _Cut(continuation(details, request_iterator), self)

    def intercept_unary_stream(self, continuation, details, request):
        self._note(details, request)
        return continuation(details, request)
