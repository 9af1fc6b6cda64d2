// overlap-sim: the command-line program. Everything but the process lives in tools/cli.cpp
// (run_cli), so the tests run the same code in-process.
#include <iostream>

#include "tools/cli.hpp"

int main(int argc, char** argv) { return overlap::tools::run_cli(argc, argv, std::cout, std::cerr); }
