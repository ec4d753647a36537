// A stable machine fingerprint: the same on one machine for one
// application in every seatd client (Go, Python, TypeScript, C++/C).
#pragma once

#include <string>

namespace seatd {

// lowercase hex of HMAC-SHA256(key = machine id with surrounding
// whitespace trimmed, message = app). Keyed per application, so two
// vendors' fingerprints of one machine cannot be matched.
std::string fingerprint_of(const std::string& machine_id, const std::string& app);

// The OS machine id: $SEATD_MACHINE_ID when set (containers, CI), else
// /etc/machine-id, else /var/lib/dbus/machine-id (on macOS IOPlatformUUID,
// on Windows MachineGuid). Throws std::runtime_error when there is none.
std::string machine_id();

// fingerprint_of(machine_id(), app).
std::string machine_fingerprint(const std::string& app);

}  // namespace seatd
