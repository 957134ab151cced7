#include "node/tsnode/flag_sources.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>
#include <ostream>

namespace ts::tsnode {

namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string DescribeConfigError(const CLI::App& app, const std::string& what) {
  const std::string marker = "not able to parse ";
  const size_t at = what.find(marker);
  if (at == std::string::npos) return what;
  const std::string key = what.substr(at + marker.size());
  std::string best;
  size_t best_distance = 4;  // further than 3 edits is no suggestion
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) {
      if (size_t d = EditDistance(key, name); d < best_distance) {
        best_distance = d;
        best = name;
      }
    }
  }
  return "unknown key '" + key + "' in the config file" + (best.empty() ? "" : "; did you mean '" + best + "'?");
}

std::string EnvNameFor(const std::string& env_prefix, const std::string& long_name) {
  std::string out = env_prefix + "_";
  for (char c : long_name) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void AddFlagSources(CLI::App& app, const std::string& env_prefix) {
  for (CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_lnames();
    if (names.empty() || names[0] == "help" || names[0] == "version") continue;
    opt->envname(EnvNameFor(env_prefix, names[0]));
  }
  app.allow_config_extras(CLI::config_extras_mode::error);  // a misspelt key is an error, not ignored
  app.set_config("--config", "",
                 "TOML file of flags: one `name = value` per line, names as the long flags without the dashes "
                 "(data-dir = \"/var/lib/ts/1\"); the command line and " + env_prefix +
                     "_* environment variables take precedence over it");
  app.add_flag("--print-config")
      ->description("print the configuration these flags, variables and file make, as a config file, and exit")
      ->configurable(false);
}

std::vector<std::string> WithEnvironment(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  auto given = [&](const std::string& name) {
    for (int i = 1; i < argc; ++i) {
      std::string_view a = argv[i];
      if (a == "--") break;
      if (a == "--" + name || a.starts_with("--" + name + "=")) return true;
    }
    return false;
  };
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_envname().empty() || opt->get_lnames().empty()) continue;
    const char* value = std::getenv(opt->get_envname().c_str());
    if (value != nullptr && !given(opt->get_lnames()[0])) args.push_back("--" + opt->get_lnames()[0] + "=" + value);
  }
  return args;
}

bool PrintConfigIfAsked(const CLI::App& app, std::ostream& out) {
  if (app.get_option("--print-config")->count() == 0) return false;
  out << app.config_to_str(/*default_also=*/true, /*write_description=*/true);
  return true;
}

}  // namespace ts::tsnode
