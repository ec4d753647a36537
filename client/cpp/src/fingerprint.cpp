#include "seatd/fingerprint.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#if defined(__APPLE__)
#include <CoreFoundation/CoreFoundation.h>
#include <IOKit/IOKitLib.h>
#elif defined(_WIN32)
#include <windows.h>
#endif

namespace seatd {

static std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\v\f";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string fingerprint_of(const std::string& id, const std::string& app) {
  std::string key = trim(id);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(app.data()),
           app.size(), mac, &n) == nullptr)
    throw std::runtime_error("seatd: HMAC-SHA256 failed");
  static const char* d = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (unsigned int i = 0; i < n; i++) out[2 * i] = d[mac[i] >> 4], out[2 * i + 1] = d[mac[i] & 15];
  return out;
}

static std::string read_id(const char* path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return trim(ss.str());
}

std::string machine_id() {
  if (const char* env = std::getenv("SEATD_MACHINE_ID"); env != nullptr && !trim(env).empty()) return trim(env);
#if defined(__APPLE__)
  // IOPlatformUUID of the IOPlatformExpertDevice (as `ioreg -rd1 -c IOPlatformExpertDevice`).
  io_service_t dev = IOServiceGetMatchingService(kIOMasterPortDefault, IOServiceMatching("IOPlatformExpertDevice"));
  if (dev) {
    CFStringRef uuid = static_cast<CFStringRef>(
        IORegistryEntryCreateCFProperty(dev, CFSTR(kIOPlatformUUIDKey), kCFAllocatorDefault, 0));
    IOObjectRelease(dev);
    if (uuid) {
      char buf[128];
      bool ok = CFStringGetCString(uuid, buf, sizeof buf, kCFStringEncodingUTF8);
      CFRelease(uuid);
      if (ok && !trim(buf).empty()) return trim(buf);
    }
  }
#elif defined(_WIN32)
  // HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid, read from the 64-bit view.
  char buf[128];
  DWORD n = sizeof buf;
  if (RegGetValueA(HKEY_LOCAL_MACHINE, "SOFTWARE\\Microsoft\\Cryptography", "MachineGuid",
                   RRF_RT_REG_SZ | RRF_SUBKEY_WOW6464KEY, nullptr, buf, &n) == ERROR_SUCCESS &&
      !trim(buf).empty())
    return trim(buf);
#else
  for (const char* p : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::string id = read_id(p);
    if (!id.empty()) return id;
  }
#endif
  throw std::runtime_error(
      "seatd: no machine id (/etc/machine-id, /var/lib/dbus/machine-id); set SEATD_MACHINE_ID");
}

std::string machine_fingerprint(const std::string& app) { return fingerprint_of(machine_id(), app); }

}  // namespace seatd
