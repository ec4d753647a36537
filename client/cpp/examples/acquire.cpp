// Acquires a seat, works while it heartbeats itself, and releases it
// (RAII: when the Lease goes out of scope).
//
//   seatd-example <address> <license key> [seconds]
#include <seatd/seatd.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: seatd-example <address> <license key> [seconds]\n";
    return 2;
  }
  int seconds = argc > 3 ? std::atoi(argv[3]) : 10;
  try {
    seatd::ClientOptions options;
    options.address = argv[1];
    seatd::Client client(options);

    std::atomic<bool> lost{false};
    seatd::AcquireOptions a;
    a.license_key = argv[2];
    a.fingerprint = seatd::machine_fingerprint("com.example.cad");
    a.on_lost = [&](const seatd::Error& e) {
      std::cerr << "seat lost (" << e.reason() << "): " << e.message() << "\n";
      lost = true;  // save the work and stop
    };
    seatd::Lease lease = client.acquire(a);
    std::cout << "acquired " << lease.id() << " (" << lease.seats_in_use() << "/" << lease.seat_limit() << ")\n";
    for (int i = 0; i < seconds && !lost; i++) std::this_thread::sleep_for(std::chrono::seconds(1));  // the work
    std::cout << "releasing " << lease.id() << "\n";
  } catch (const seatd::Error& e) {
    if (e.no_seat())
      std::cerr << "no seat free (" << e.meta("seats_in_use") << "/" << e.meta("seat_limit") << " in use)\n";
    else
      std::cerr << e.what() << " (" << e.reason() << ")\n";
    return 1;
  }
  return 0;
}
