/* The C API used from C (run by client_test.cpp's CApiFromC):
 *   seatd-c-api-test <address> <license key of a one-seat license>
 * acquires, meets a full license, heartbeats, prints "acquired <id>",
 * waits for the lost callback of the revoke the test sends, releases,
 * acquires again. Exits 0 when all went as the API says. */
#include <seatd/seatd.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int lost_code;
static char lost_reason[64];

static void on_lost(void *user_data, int code, const char *reason, const char *message) {
  (void)message;
  pthread_mutex_lock(&mu);
  *(int *)user_data += 1;
  lost_code = code;
  snprintf(lost_reason, sizeof lost_reason, "%s", reason);
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "c_api_test: %s:%d: %s (last error: %s %s)\n", __FILE__, __LINE__, #cond, \
              seatd_errreason(), seatd_errmsg());                            \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(int argc, char **argv) {
  seatd_client *client = NULL;
  seatd_lease *lease = NULL, *other = NULL;
  seatd_client_options co = SEATD_CLIENT_OPTIONS_INIT;
  seatd_acquire_options o = SEATD_ACQUIRE_OPTIONS_INIT;
  int lost_calls = 0;
  char fp[65], reason[64];
  struct timespec until;

  CHECK(argc == 3);
  co.min_interval_ms = 200;
  co.clock_check_ms = 100;
  CHECK(seatd_client_open(argv[1], &co, &client) == SEATD_OK);
  CHECK(seatd_fingerprint_of("0123456789abcdef0123456789abcdef", "com.example.cad", fp) == SEATD_OK);
  CHECK(strcmp(fp, "b6ce59c45fac92eebd88cd6147aff326df624d5dcf76df1674987ddedbe6c8c7") == 0);

  o.license_key = argv[2];
  o.fingerprint = "c-1";
  o.on_lost = on_lost;
  o.user_data = &lost_calls;
  CHECK(seatd_acquire(client, &o, &lease) == SEATD_OK);
  CHECK(strncmp(seatd_lease_id(lease), "lse_", 4) == 0);
  CHECK(seatd_lease_seats_in_use(lease) == 1 && seatd_lease_seat_limit(lease) == 1);
  CHECK(seatd_lease_expires_at_ms(lease) > (int64_t)time(NULL) * 1000);

  o.fingerprint = "c-2";
  o.on_lost = NULL;
  CHECK(seatd_acquire(client, &o, &other) == SEATD_NO_SEAT);
  CHECK(other == NULL);
  CHECK(strcmp(seatd_errreason(), "SEATS_EXHAUSTED") == 0);
  CHECK(seatd_errmsg()[0] != '\0');

  CHECK(seatd_heartbeat(lease) == SEATD_OK);
  CHECK(seatd_lease_lost(lease) == 0);

  printf("acquired %s\n", seatd_lease_id(lease));
  fflush(stdout);
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  pthread_mutex_lock(&mu);
  while (lost_calls == 0 && pthread_cond_timedwait(&cv, &mu, &until) == 0) {
  }
  pthread_mutex_unlock(&mu);
  CHECK(lost_calls == 1);
  CHECK(lost_code == SEATD_LEASE_LOST);
  CHECK(strcmp(lost_reason, "LEASE_REVOKED") == 0);
  CHECK(seatd_lease_lost(lease) == 1);
  CHECK(seatd_lease_reason(lease, reason, sizeof reason) == strlen("LEASE_REVOKED"));
  CHECK(strcmp(reason, "LEASE_REVOKED") == 0);
  CHECK(seatd_release(lease) == SEATD_OK); /* a lost lease needs no release */

  CHECK(seatd_acquire(client, &o, &other) == SEATD_OK); /* the seat is free again */
  CHECK(seatd_release(other) == SEATD_OK);

  CHECK(seatd_release(NULL) == SEATD_MISUSE);
  CHECK(seatd_acquire(client, NULL, &other) == SEATD_MISUSE);
  seatd_client_close(client);
  return 0;
}
