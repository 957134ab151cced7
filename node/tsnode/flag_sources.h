// Where a program's flags come from besides its command line: a TOML config
// file (--config FILE; keys are the long flag names without the dashes) and
// environment variables (PREFIX_NAME: --data-dir is TSNODE_DATA_DIR).
// Precedence, highest first: command line, environment, config file, the
// built-in default. `--print-config` prints the result as a config file and
// exits, so an operator sees what a node would run with.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ts::tsnode {

// Call after every option is added and before parsing. Adds --config and
// --print-config, and names an environment variable for every long option
// (shown by --help as "(Env:...)").
void AddFlagSources(CLI::App& app, const std::string& env_prefix);

// The arguments to parse: argv, plus "--name=value" for every option whose
// environment variable is set and that argv does not give. (CLI11 reads its
// config file before the environment, so the environment is passed as
// arguments to come out on top of the file.)
std::vector<std::string> WithEnvironment(const CLI::App& app, int argc, const char* const* argv);

// Call after a successful parse: prints the effective configuration (every
// option, defaults included, with its description) and returns true when
// --print-config was given.
bool PrintConfigIfAsked(const CLI::App& app, std::ostream& out);

// A config-file parse error in the file's own terms: "unknown key 'K' in
// the config file; did you mean 'L'?" for the key CLI11 could not place
// (its own text says "INI" whatever the file's format); else `what`.
std::string DescribeConfigError(const CLI::App& app, const std::string& what);

// The environment variable AddFlagSources names for a long flag name
// ("data-dir" -> "TSNODE_DATA_DIR").
std::string EnvNameFor(const std::string& env_prefix, const std::string& long_name);

}  // namespace ts::tsnode
