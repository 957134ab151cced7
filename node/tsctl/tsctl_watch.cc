// tsctl watch; see tsctl_watch.h.
#include "node/tsctl/tsctl_watch.h"

#include <csignal>

#include "node/client/watch.h"
#include "node/tsctl/tsctl_txn.h"

namespace ts::tsctl {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void OnInterrupt(int) { g_interrupted = 1; }

std::string EventText(const rpc::WatchEvent& e) {
  if (e.kind == rpc::WatchEvent::Kind::kDelete) return std::to_string(e.slot) + " delete " + Printable(e.key);
  return std::to_string(e.slot) + " put " + Printable(e.key) + " " + Printable(e.value);
}

}  // namespace

void AddWatchCommand(CLI::App& app, WatchArgs* a) {
  CLI::App* w = app.add_subcommand(
      "watch",
      "watch KEY | --prefix P [--from-slot S]: print every change to KEY (or to the keys starting with P), one line "
      "each, in slot order, from slot S (default: the next change); the stream resumes on another endpoint when "
      "it is lost, without a gap or a repeat. Ctrl-C ends it (exit 0). Exit 1 if every endpoint no longer keeps "
      "slot S (compacted)");
  w->add_option("KEY", a->key, "The key to watch");
  w->add_option("--prefix", a->prefix, "Watch every key that starts with this (\"\": every key)");
  w->add_option("--from-slot", a->from_slot, "First slot whose changes to print (0: from the next change)")
      ->capture_default_str();
  w->add_option("--count", a->count, "Stop after this many changes (0: never)")->capture_default_str();
}

int RunWatch(const client::Client& client, const WatchArgs& a, Output& out, std::ostream& err) {
  const bool prefix = a.prefix_given;
  if (prefix && !a.key.empty()) return out.Fail(kExitUsage, "bad arguments: watch takes KEY or --prefix P, not both");
  if (!prefix && a.key.empty()) {
    return out.Fail(kExitUsage, "bad arguments: watch takes KEY, or --prefix P (--prefix \"\" watches every key)");
  }
  std::unique_ptr<client::Watcher> w = client.Watch(prefix ? a.prefix : a.key, prefix, a.from_slot);
  client::Watcher& watcher = *w;
  g_interrupted = 0;
  auto previous = std::signal(SIGINT, OnInterrupt);
  uint64_t printed = 0, resumes = 0;
  int rc = kExitOk;
  while (!g_interrupted && (a.count == 0 || printed < a.count)) {
    auto r = watcher.Next(std::chrono::milliseconds(200));
    if (!r.ok()) continue;  // nothing yet: the watcher resumes by itself
    if (watcher.stats().resumes != resumes) {
      resumes = watcher.stats().resumes;
      err << "watch: resumed on " << watcher.serving() << " from slot " << watcher.last_slot() + 1 << "\n" << std::flush;
    }
    if (!r->stream_more) {
      if (r->code == rpc::ClientCode::kCompacted) {
        rc = out.Fail(kExitFailed, "compacted: " + r->message, {{"compacted", true}, {"oldest_slot", r->slot}});
      } else {
        rc = r->code == rpc::ClientCode::kOk ? kExitOk : FailAnswer(out, *r, "watch");
      }
      break;
    }
    for (const rpc::WatchEvent& e : r->events) {
      if (a.count != 0 && printed >= a.count) break;
      if (out.json()) {
        out.out() << DumpJson(WatchEventJson(e)) << '\n';
      } else {
        out.out() << EventText(e) << '\n';
      }
      ++printed;
    }
    out.out() << std::flush;
  }
  std::signal(SIGINT, previous);
  if (g_interrupted || (a.count != 0 && printed >= a.count)) watcher.Cancel();
  return rc;
}

}  // namespace ts::tsctl
