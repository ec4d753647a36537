/* The seatd C API: a floating-license seat from C, Delphi, Rust, C#
 * P/Invoke or Python ctypes, over the same library as the C++ API.
 *
 * Shaped as SQLite's: opaque handles, integer result codes, and the last
 * error's message and reason for the calling thread (seatd_errmsg,
 * seatd_errreason). No C++ exception crosses this API.
 *
 *   seatd_client *c;
 *   seatd_lease *l;
 *   seatd_acquire_options o = SEATD_ACQUIRE_OPTIONS_INIT;
 *   if (seatd_client_open("seatd.example.com:9090", NULL, &c) != SEATD_OK) ...
 *   o.license_key = key; o.fingerprint = fp;
 *   if (seatd_acquire(c, &o, &l) != SEATD_OK) fprintf(stderr, "%s\n", seatd_errmsg());
 *   ... work: the lease heartbeats itself on a thread of its own ...
 *   seatd_release(l);          gives the seat back and frees the handle
 *   seatd_client_close(c);
 */
#ifndef SEATD_H
#define SEATD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result codes. */
enum {
  SEATD_OK = 0,
  SEATD_ERROR = 1,             /* any other failure: see seatd_errmsg, seatd_errreason */
  SEATD_NO_SEAT = 2,           /* none free for this client now (SEATS_EXHAUSTED, a policy cap): retry later or wait */
  SEATD_NOT_ALLOWED = 3,       /* the site policy refuses this client (EXCLUDED, NOT_INCLUDED) */
  SEATD_LEASE_LOST = 4,        /* expired, revoked, released or taken over */
  SEATD_BAD_CERTIFICATE = 5,   /* an answer's lease certificate did not verify (LEASE_CERTIFICATE_INVALID) */
  SEATD_UNAVAILABLE = 6,       /* seatd cannot be reached (after the retries) */
  SEATD_TIMEOUT = 7,           /* a deadline passed (wait_for_seat's timeout: WAIT_TIMEOUT) */
  SEATD_INVALID_ARGUMENT = 8,  /* a request field seatd refused, or a bad argument to this API */
  SEATD_NOT_FOUND = 9,         /* no license with that key (LICENSE_NOT_FOUND) */
  SEATD_NOT_LICENSED = 10,     /* FEATURE_NOT_LICENSED, VERSION_NOT_LICENSED, GRANT_NOT_STARTED */
  SEATD_MISUSE = 11            /* a NULL handle or output pointer */
};

typedef struct seatd_client seatd_client;
typedef struct seatd_lease seatd_lease;

/* Called once, on the lease's own thread, when the lease is lost for good
 * (code SEATD_LEASE_LOST or SEATD_BAD_CERTIFICATE; reason e.g.
 * "LEASE_REVOKED"). The strings live only during the call. Do not call
 * seatd_release from inside it. */
typedef void (*seatd_lost_fn)(void *user_data, int code, const char *reason, const char *message);
/* A waiter's place in the queue; position 1 is next. */
typedef void (*seatd_position_fn)(void *user_data, int position, int queue_length);

/* The last failure on this thread: its message and seatd's reason
 * ("SEATS_EXHAUSTED", "" when none). Valid until the thread's next call. */
const char *seatd_errmsg(void);
const char *seatd_errreason(void);
const char *seatd_version(void);

/* Client options; set the fields you need after SEATD_CLIENT_OPTIONS_INIT.
 * Fields are only ever added at the end (size tells which are there). */
typedef struct seatd_client_options {
  size_t size;
  const char *signing_keys;      /* the tenant's JWKS (JSON), or NULL: no certificate checks */
  const char *tls_ca_pem;        /* PEM CA bundle for TLS, or NULL: plaintext */
  int reacquire_on_expiry;       /* nonzero: a new lease after an expiry instead of the lost callback */
  int heartbeat_stream;          /* 0: unary heartbeats only; default 1 */
  int64_t call_timeout_ms;       /* 0: 10000 */
  int64_t min_interval_ms;       /* shortest heartbeat interval; 0: 1000 */
  int64_t clock_check_ms;        /* 0: 1000 */
  int64_t backoff_base_ms;       /* 0: 250 */
  int64_t backoff_max_ms;        /* 0: 10000 */
} seatd_client_options;
#define SEATD_CLIENT_OPTIONS_INIT {sizeof(seatd_client_options), NULL, NULL, 0, 1, 0, 0, 0, 0, 0}

/* address: "host:port", or "ipv4:a:port,b:port" for several instances.
 * options may be NULL. */
int seatd_client_open(const char *address, const seatd_client_options *options, seatd_client **out);
/* Frees the client; leases acquired through it go on until released. */
void seatd_client_close(seatd_client *client);

typedef struct seatd_acquire_options {
  size_t size;
  const char *license_key;
  const char *fingerprint;       /* seatd_machine_fingerprint gives a stable one */
  const char *user;              /* NULL or "" when none */
  const char *hostname;
  const char *feature;           /* NULL: a seat of the license's base pool */
  const char *version;           /* the feature's version this program is */
  const char *idempotency_key;   /* NULL: a new one (reused by every retry of this call) */
  int64_t timeout_ms;            /* 0: the default */
  seatd_lost_fn on_lost;         /* may be NULL */
  void *user_data;               /* passed to on_lost */
} seatd_acquire_options;
#define SEATD_ACQUIRE_OPTIONS_INIT {sizeof(seatd_acquire_options), NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL}

/* Takes a seat; the lease heartbeats itself until seatd_release. */
int seatd_acquire(seatd_client *client, const seatd_acquire_options *options, seatd_lease **out);
/* Queues for a seat (FIFO) until granted or timeout_ms (0: no limit). */
int seatd_wait_for_seat(seatd_client *client, const seatd_acquire_options *options,
                        seatd_position_fn on_position, void *position_user_data, int64_t timeout_ms,
                        seatd_lease **out);
/* Borrows a seat for offline use for duration_s seconds (no heartbeats). */
int seatd_borrow(seatd_client *client, const seatd_acquire_options *options, int64_t duration_s, seatd_lease **out);
/* Stops the heartbeats, gives the seat back and frees the handle (even
 * when seatd could not be told: the seat then lapses at its deadline). */
int seatd_release(seatd_lease *lease);
/* One heartbeat now. */
int seatd_heartbeat(seatd_lease *lease);

/* The lease's id, license id, feature and grant id (valid until seatd_release). */
const char *seatd_lease_id(const seatd_lease *lease);
const char *seatd_lease_license_id(const seatd_lease *lease);
const char *seatd_lease_feature(const seatd_lease *lease);
const char *seatd_lease_grant_id(const seatd_lease *lease);
/* The deadline seatd last told, in Unix milliseconds. */
int64_t seatd_lease_expires_at_ms(const seatd_lease *lease);
int seatd_lease_seats_in_use(const seatd_lease *lease);
int seatd_lease_seat_limit(const seatd_lease *lease);
/* Nonzero once lost; the reason then (copied into buf, NUL-terminated). */
int seatd_lease_lost(const seatd_lease *lease);
/* Copies the latest certificate (or reason) into buf (size n) and returns
 * its length; a return >= n means buf was too small. */
size_t seatd_lease_certificate(const seatd_lease *lease, char *buf, size_t n);
size_t seatd_lease_reason(const seatd_lease *lease, char *buf, size_t n);

/* Checks a stored certificate offline with a JWKS, at now_unix (0: now). */
int seatd_verify_offline(const char *certificate, const char *jwks, int64_t now_unix);

/* The machine fingerprint of app (65 bytes: 64 hex digits and a NUL). */
int seatd_machine_fingerprint(const char *app, char out[65]);
/* The fingerprint of app on a machine with this id. */
int seatd_fingerprint_of(const char *machine_id, const char *app, char out[65]);

#ifdef __cplusplus
}
#endif
#endif /* SEATD_H */
