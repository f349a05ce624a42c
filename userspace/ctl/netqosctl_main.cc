// netqosctl entry point; everything lives in ctl/ctl.cc.
#include <iostream>

#include "ctl/ctl.h"

int main(int argc, char** argv) { return netqos::ctl::RunCtl(argc, argv, std::cout, std::cerr); }
