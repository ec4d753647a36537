/* Acquires a seat, works while it heartbeats itself, and releases it.
 *
 *   seatd-example-c <address> <license key> [seconds]
 */
#include <seatd/seatd.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int lost;

static void on_lost(void *user_data, int code, const char *reason, const char *message) {
  (void)user_data;
  fprintf(stderr, "seat lost (%d %s): %s\n", code, reason, message);
  lost = 1; /* save the work and stop */
}

int main(int argc, char **argv) {
  seatd_client *client;
  seatd_lease *lease;
  seatd_acquire_options o = SEATD_ACQUIRE_OPTIONS_INIT;
  char fingerprint[65];
  int seconds = argc > 3 ? atoi(argv[3]) : 10;

  if (argc < 3) {
    fprintf(stderr, "usage: seatd-example-c <address> <license key> [seconds]\n");
    return 2;
  }
  if (seatd_machine_fingerprint("com.example.cad", fingerprint) != SEATD_OK ||
      seatd_client_open(argv[1], NULL, &client) != SEATD_OK) {
    fprintf(stderr, "%s\n", seatd_errmsg());
    return 1;
  }
  o.license_key = argv[2];
  o.fingerprint = fingerprint;
  o.on_lost = on_lost;
  switch (seatd_acquire(client, &o, &lease)) {
    case SEATD_OK:
      break;
    case SEATD_NO_SEAT:
      fprintf(stderr, "no seat free: %s\n", seatd_errmsg());
      seatd_client_close(client);
      return 1;
    default:
      fprintf(stderr, "%s (%s)\n", seatd_errmsg(), seatd_errreason());
      seatd_client_close(client);
      return 1;
  }
  printf("acquired %s\n", seatd_lease_id(lease));
  for (int i = 0; i < seconds && !lost; i++) sleep(1); /* the work */
  printf("releasing %s\n", seatd_lease_id(lease));
  seatd_release(lease);
  seatd_client_close(client);
  return 0;
}
