#include "node/tsnode/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <cstdint>

namespace ts::tsnode {

SystemdNotifier::SystemdNotifier() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) > 0) watchdog_ = std::chrono::microseconds(usec);
}

void SystemdNotifier::Ready(const std::string& status) {
  sd_notify(0, ("READY=1\nSTATUS=" + status).c_str());
}

void SystemdNotifier::Stopping() { sd_notify(0, "STOPPING=1"); }

void SystemdNotifier::Alive(std::chrono::steady_clock::time_point now) {
  if (watchdog_.count() == 0 || now - last_ping_ < watchdog_ / 2) return;
  last_ping_ = now;
  sd_notify(0, "WATCHDOG=1");
}

}  // namespace ts::tsnode
