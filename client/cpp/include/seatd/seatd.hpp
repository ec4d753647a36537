// The seatd C++ client: #include <seatd/seatd.hpp>.
#pragma once

#include "seatd/certificate.hpp"
#include "seatd/client.hpp"
#include "seatd/error.hpp"
#include "seatd/fingerprint.hpp"
#include "seatd/lease.hpp"
