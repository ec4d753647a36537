// Tests without a server: the machine fingerprint's vectors (shared by
// every client), the retry policy's text, versions, JWKS parsing.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "seatd/seatd.h"
#include "seatd/seatd.hpp"

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

google::protobuf::Struct json(const std::string& text) {
  google::protobuf::Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &s).ok()) << text;
  return s;
}

// client/testdata/fingerprint_vectors.json: the same fingerprints in every
// client, from the C++ API and the C API.
TEST(Fingerprint, Vectors) {
  auto doc = json(read(std::string(SEATD_TESTDATA) + "/fingerprint_vectors.json"));
  const auto& vectors = doc.fields().at("vectors").list_value().values();
  ASSERT_GE(vectors.size(), 5);
  for (const auto& v : vectors) {
    const auto& f = v.struct_value().fields();
    std::string id = f.at("machine_id").string_value(), app = f.at("app").string_value();
    std::string want = f.at("fingerprint").string_value();
    EXPECT_EQ(want, seatd::fingerprint_of(id, app)) << id << " " << app;
    char out[65];
    ASSERT_EQ(SEATD_OK, seatd_fingerprint_of(id.c_str(), app.c_str(), out));
    EXPECT_EQ(want, out);
    // The override containers and CI set.
    setenv("SEATD_MACHINE_ID", id.c_str(), 1);
    EXPECT_EQ(want, seatd::machine_fingerprint(app));
    ASSERT_EQ(SEATD_OK, seatd_machine_fingerprint(app.c_str(), out));
    EXPECT_EQ(want, out);
  }
  unsetenv("SEATD_MACHINE_ID");
}

// Without the override: the OS machine id, trimmed, whichever file has it.
TEST(Fingerprint, MachineIdFromTheOS) {
  unsetenv("SEATD_MACHINE_ID");
  std::string id;
  for (const char* p : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::string s = read(p);
    auto b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    if (b != std::string::npos) {
      id = s.substr(b, e - b + 1);
      break;
    }
  }
  if (id.empty()) {
    EXPECT_THROW(seatd::machine_id(), std::runtime_error);
    return;
  }
  EXPECT_EQ(id, seatd::machine_id());
  EXPECT_EQ(seatd::fingerprint_of(id, "com.example.cad"), seatd::machine_fingerprint("com.example.cad"));
  EXPECT_NE(seatd::machine_fingerprint("com.example.cad"), seatd::machine_fingerprint("com.example.sim"));
}

// The retry policy is client/service_config.json, the Go client's.
TEST(Retries, ServiceConfigMatchesGo) {
  auto want = json(read(std::string(SEATD_TESTDATA) + "/../service_config.json"));
  auto got = json(seatd::Client::service_config());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(want, got));
}

TEST(Versions, ComparedAsSeatdDoes) {
  EXPECT_EQ(-1, seatd::compare_versions("1.9", "1.10"));
  EXPECT_EQ(0, seatd::compare_versions("3", "3.0"));
  EXPECT_EQ(1, seatd::compare_versions("2025", "2024.12"));
  EXPECT_EQ(0, seatd::compare_versions("2024.02", "2024.2"));
}

TEST(SigningKeys, RefusesWhatIsNotAPublicEd25519Set) {
  EXPECT_THROW(seatd::SigningKeys("not json"), std::invalid_argument);
  EXPECT_THROW(seatd::SigningKeys(R"({"keys": []})"), std::invalid_argument);
  EXPECT_THROW(seatd::SigningKeys(R"({"keys": [{"kty":"OKP","crv":"Ed25519","kid":"k","x":"AAAA"}]})"),
               std::invalid_argument);
  const char* x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
  EXPECT_THROW(seatd::SigningKeys(std::string(R"({"keys": [{"kty":"OKP","crv":"Ed25519","kid":"k","x":")") + x +
                                  R"(","d":"secret"}]})"),
               std::invalid_argument);
  seatd::SigningKeys ok(std::string(R"({"keys": [{"kty":"OKP","crv":"Ed25519","kid":"k","x":")") + x + R"("}]})");
  try {
    ok.verify("a.b");
    FAIL() << "a token of two parts verified";
  } catch (const seatd::Error& e) {
    EXPECT_EQ(seatd::kBadCertificate, e.reason());
  }
}

TEST(CApi, MisuseIsACodeNotACrash) {
  EXPECT_EQ(SEATD_MISUSE, seatd_acquire(nullptr, nullptr, nullptr));
  EXPECT_STRNE("", seatd_errmsg());
  EXPECT_EQ(SEATD_MISUSE, seatd_release(nullptr));
  seatd_client* c = nullptr;
  EXPECT_EQ(SEATD_INVALID_ARGUMENT, seatd_client_open("", nullptr, &c));
  EXPECT_EQ(nullptr, c);
}

}  // namespace
