// tsctl: the command-line client of a tracking-station cluster. Everything
// but the process boundary lives in tsctl_cli.cc (tested in-process).
#include <iostream>

#include "node/tsctl/tsctl_cli.h"

int main(int argc, char** argv) { return ts::tsctl::RunTsctl(argc, argv, std::cout, std::cerr); }
