// Tells systemd (Type=notify units) how the node is doing, through
// sd_notify(3): READY=1 once both ports serve, STOPPING=1 on the way out,
// and WATCHDOG=1 from the event loop itself while the unit sets WatchdogSec,
// so systemd restarts a node whose loop is stuck. Outside systemd
// (NOTIFY_SOCKET unset) every call does nothing.
#pragma once

#include <chrono>
#include <string>

namespace ts::tsnode {

class SystemdNotifier {
 public:
  SystemdNotifier();
  void Ready(const std::string& status);
  void Stopping();
  // Call from every loop iteration: pings the watchdog at half its period.
  void Alive(std::chrono::steady_clock::time_point now);

 private:
  std::chrono::microseconds watchdog_{0};  // 0: no watchdog asked for
  std::chrono::steady_clock::time_point last_ping_{};
};

}  // namespace ts::tsnode
